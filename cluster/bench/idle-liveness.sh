#!/bin/bash
# idle-liveness.sh TOPOLOGY BASE WINDOW_S [cluster up flags]: the CPU all daemons of an idle
# local cluster take over a window, REST (10) s after it is up, and its liveness counters; for
# docs/notes/2026-12-03-link-liveness.md. Uses the repository's target/release/cuberoute if
# built, else its debug one (CARGO_TARGET_DIR is followed).
set -u
topo=$1; base=$2; window=$3; shift 3
target=${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/target}
bin=$target/debug/cuberoute
[ -x "$target/release/cuberoute" ] && bin=$target/release/cuberoute
dir=$(mktemp -u /tmp/idle-liveness.XXXX)
start=$(date +%s.%N)
$bin cluster up $topo --dir $dir --base-addr $base "$@" >/dev/null 2>$dir.up.err || { echo "up failed"; tail -3 $dir.up.err; $bin cluster down --dir $dir >/dev/null 2>&1; exit 1; }
up=$(echo "$(date +%s.%N) - $start" | bc)
sleep ${REST:-10}
pids=$(grep '^pid = ' $dir/run.toml | awk '{print $3}')
ticks() { local s=0; for p in $pids; do set -- $(awk '{print $14, $15}' /proc/$p/stat 2>/dev/null); s=$((s + ${1:-0} + ${2:-0})); done; echo $s; }
t0=$(ticks); w0=$(date +%s.%N)
sleep $window
t1=$(ticks); w1=$(date +%s.%N)
n=$(echo $pids | wc -w)
cpu=$(echo "scale=3; ($t1 - $t0) / ($w1 - $w0)" | bc)   # ticks/s = % of one core at 100 Hz
ev=$($bin cluster status --dir $dir --json 2>/dev/null | python3 -c '
import json,sys
d=json.load(sys.stdin); s=a=f=u=0
for n in d["nodes"]:
    e=(n.get("counters") or {}).get("events",{})
    s+=e.get("link_suspected",0); a+=e.get("link_found_alive",0); f+=e.get("link_down_found_alive",0); u+=e.get("link_lost",0)
print(f"suspected {s} found_alive {a} down_found_alive {f} link_lost {u}")' 2>&1)
echo "$(date -u +%FT%TZ) $topo $* daemons $n up_in ${up}s window ${window}s cpu_all_daemons ${cpu}% of one core; $ev; load $(cut -d' ' -f1-3 /proc/loadavg)"
$bin cluster down --dir $dir >/dev/null 2>&1
rm -rf $dir $dir.up.err
