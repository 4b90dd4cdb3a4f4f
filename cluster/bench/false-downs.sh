#!/bin/bash
# false-downs.sh TOPOLOGY BASE NET SECONDS [cluster up flags]: false "down"s under overload with
# loss on every link, for RELIABILITY.md ("Detection"). Brings up a local cluster at BASE, has the
# kernel drop LOSS (5) % of the UDP datagrams sent to NET (the cluster's addresses, as a CIDR:
# every link's datagrams each way, and the bench's) with an nftables rule in this namespace (root
# only; on input: a datagram dropped on output fails the sender's sendmsg with EPERM), runs `bench --running` with CONCURRENCY (1024) sets in flight for SECONDS, lifts the
# rule, and prints the liveness counters of every node over the run: probes sent, suspicions,
# suspicions found alive, links lost (every one of them false: no process dies here) and downs
# found alive. BENCH_ARGS are added to the bench's (`--clear`: no end-to-end seal). AFTER=S
# watches the cluster S seconds after the load (the load average every 10 s; with PERF=FILE, a
# `perf record` of the whole machine for 15 s into FILE first), before the counters are read;
# PERF_LOAD=FILE records 10 s in the middle of the load into FILE; KEEP=FILE keeps the logs'
# lines of links down into FILE.
# Uses the repository's target/release/cuberoute if built, else its debug one.
set -u
topo=$1; base=$2; net=$3; seconds=$4; shift 4
loss=${LOSS:-5}; concurrency=${CONCURRENCY:-1024}
target=${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/target}
bin=$target/debug/cuberoute
[ -x "$target/release/cuberoute" ] && bin=$target/release/cuberoute
dir=$(mktemp -u /tmp/false-downs.XXXX)
table=cuberoute_false_downs
lift() { nft delete table ip $table 2>/dev/null; }
down() { lift; $bin cluster down --dir $dir >/dev/null 2>&1; rm -rf $dir $dir.*; }
trap down EXIT
$bin cluster up $topo --dir $dir --base-addr $base "$@" >/dev/null 2>$dir.up.err \
    || { echo "up failed"; tail -3 $dir.up.err; exit 1; }
sleep ${REST:-10}
counters() {
    $bin cluster status --dir $dir --json | python3 -c '
import json,sys
d=json.load(sys.stdin); t={}
for n in d["nodes"]:
    for k,v in ((n.get("counters") or {}).get("events") or {}).items(): t[k]=t.get(k,0)+v
print(json.dumps(t))'
}
before=$(counters) || { echo "status failed"; exit 1; }
lift
nft -f - <<EOF || { echo "nft failed"; exit 1; }
table ip $table {
    chain in {
        type filter hook input priority 0; policy accept;
        ip daddr $net meta l4proto udp numgen random mod 100 < $loss counter drop
        ip daddr $net meta l4proto udp counter
    }
}
EOF
start=$(date -u +%FT%TZ)
[ -n "${PERF_LOAD:-}" ] && (sleep $((seconds / 2)); perf record -a -g -F 199 -o "$PERF_LOAD" -- sleep 10 >/dev/null 2>&1) &
$bin bench --running $dir --concurrency $concurrency --duration ${seconds}s --samples 20 --json ${BENCH_ARGS:-} \
    > $dir.bench.json 2>$dir.bench.err || { echo "bench failed"; tail -3 $dir.bench.err; }
rule=$(nft list table ip $table | grep -o 'packets [0-9]*' | awk '{print $2}' | paste -sd' ')
lift
if [ -n "${AFTER:-}" ]; then
    [ -n "${PERF:-}" ] && perf record -a -g -F 199 -o "$PERF" -- sleep 15 >/dev/null 2>&1
    for _ in $(seq 1 $((AFTER / 10))); do
        echo "  after the load, $(date -u +%T): load average $(cut -d' ' -f1-3 /proc/loadavg)"
        sleep 10
    done
fi
after=$(counters) || { echo "status failed"; exit 1; }
sets=$(python3 -c '
import json,sys
def find(x):
    if isinstance(x,dict):
        if "sets_per_second" in x: return x
        x=list(x.values())
    if isinstance(x,list):
        for v in x:
            r=find(v)
            if r: return r
t=find(json.load(open(sys.argv[1]))) or {}
c=t.get("completion") or {}
print("sets/s", round(t.get("sets_per_second",0)), "completed", t.get("sets_completed"), "incomplete", t.get("sets_incomplete"), "completion p50 / p99 ms", round(c.get("p50_us",0)/1000,1), round(c.get("p99_us",0)/1000,1))' $dir.bench.json 2>&1)
python3 - "$before" "$after" <<EOF
import json,sys
b=json.loads(sys.argv[1]); a=json.loads(sys.argv[2])
d={k: a.get(k,0)-b.get(k,0) for k in ("link_probe_sent","link_suspected","link_found_alive","link_lost","link_down_found_alive","link_silence_held","link_up")}
probes=max(d["link_probe_sent"],1)
print("$start $topo $* daemons $(grep -c '^pid = ' $dir/run.toml) loss $loss% in flight $concurrency for ${seconds}s; datagrams dropped / passed: $rule")
print("  " + " ".join(f"{k} {v}" for k,v in d.items()) + f"; false downs per million probes {d['link_lost']*1e6/probes:.2f}")
print("  bench: $sets")
EOF
echo "  links down in the logs, by reason:"
cat $dir/logs/*.log 2>/dev/null | grep "link down" | sed 's/.*reason=//; s/[0-9]\+/N/g' | sort | uniq -c | sort -rn | head -6
echo "  the silences the silence watch judged (ms): $(cat $dir/logs/*.log 2>/dev/null | grep "link down" | grep -o 'neighbour for [0-9]* ms' | awk '{print $3}' | sort -n | awk '{a[NR]=$1} END {if (NR) print "n", NR, "min", a[1], "p50", a[int((NR+1)/2)], "p90", a[int(NR*0.9+0.5)], "max", a[NR]; else print "none"}')"
[ -n "${KEEP:-}" ] && cat $dir/logs/*.log 2>/dev/null | grep -E "link down|silent" > "$KEEP"
echo "  kernel: $(awk '/^Udp:/ {getline; print "udp receive buffer errors (since boot)", $6}' /proc/net/snmp)"
