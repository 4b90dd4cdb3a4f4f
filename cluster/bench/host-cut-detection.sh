#!/bin/bash
# host-cut-detection.sh [HOST...]: how long after a host is cut off its neighbours on the other
# hosts mark their links down (issue 48; RELIABILITY.md, section 4). A test bed of 3 hosts
# (`cuberoute testbed up`, root), a Swarm cluster of TOPOLOGY (eh:2,2) over it whose links probe
# every INTERVAL (200ms), `monitor --json` following it; each HOST in turn (h2 h3 unless given)
# is cut (`testbed cut`), every `link_down` noted by the hosts left within WAIT_S (8) seconds is
# taken with its delay from the cut (the notice's own clock: the same machine's), then the host
# is restored and every link waited for. Prints one line per host and the p50, p99 and max of
# all. Everything it made is removed at the end, however it ends. Needs the image
# (`cuberoute cluster image`) and a release or debug build of the repository.
set -u
target=${CARGO_TARGET_DIR:-$(cd "$(dirname "$0")/../.." && pwd)/target}
bin=$target/debug/cuberoute
[ -x "$target/release/cuberoute" ] && bin=$target/release/cuberoute
topology=${TOPOLOGY:-eh:2,2}
interval=${INTERVAL:-200ms}
wait_s=${WAIT_S:-8}
hosts=${*:-h2 h3}
testbed=$(mktemp -d /tmp/host-cut-testbed.XXXX)
cluster=$(mktemp -u /tmp/host-cut-cluster.XXXX)
monitor_out=$(mktemp /tmp/host-cut-monitor.XXXX)
monitor_pid=
cleanup() {
  [ -n "$monitor_pid" ] && kill "$monitor_pid" 2>/dev/null
  "$bin" cluster down --dir "$cluster" >/dev/null 2>&1
  "$bin" testbed down --dir "$testbed" >/dev/null 2>&1
  rm -rf "$testbed" "$cluster" "$monitor_out" "$monitor_out.err"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$bin" testbed up --hosts 3 --dir "$testbed" >/dev/null || { echo "testbed up failed"; exit 1; }
"$bin" cluster swarm "$topology" --dir "$cluster" --testbed "$testbed" \
  --liveness-interval "$interval" >/dev/null || { echo "cluster swarm failed"; exit 1; }
"$bin" monitor --dir "$cluster" --json >"$monitor_out" 2>"$monitor_out.err" &
monitor_pid=$!
sleep 3

all_linked() {
  "$bin" cluster status --dir "$cluster" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if all(n.get("links_up") == n.get("degree") for n in d["nodes"]) else 1)'
}

delays=()
for host in $hosts; do
  cut_ms=$(date +%s%3N)
  "$bin" testbed cut "$host" --dir "$testbed" >/dev/null || { echo "cut $host failed"; exit 1; }
  sleep "$wait_s"
  line=$(python3 - "$monitor_out" "$cut_ms" <<'EOF'
import json, sys
path, cut = sys.argv[1], int(sys.argv[2])
seen = {}
for text in open(path):
    try:
        n = json.loads(text)
    except ValueError:
        continue
    if n.get("kind") == "link_down" and n.get("at_ms", 0) >= cut:
        seen.setdefault((n["node"], n["neighbour"]), n["at_ms"] - cut)
print(" ".join(str(v) for v in sorted(seen.values())))
EOF
)
  echo "$host cut: $(echo $line | wc -w) link downs noted by the hosts left, after (ms): $line"
  delays+=($line)
  "$bin" testbed restore "$host" --dir "$testbed" >/dev/null
  for _ in $(seq 120); do all_linked && break; sleep 1; done
  all_linked || { echo "not every link up again after restoring $host"; exit 1; }
done
printf '%s\n' "${delays[@]}" | sort -n | python3 -c '
import math, sys
v = [int(x) for x in sys.stdin if x.strip()]
if not v:
    sys.exit("no link down noted")
at = lambda q: v[min(len(v), max(1, math.ceil(len(v) * q))) - 1]
print(f"'"$topology"', probes every '"$interval"': {len(v)} samples, p50 {at(0.5)} ms, p99 {at(0.99)} ms, max {v[-1]} ms, min {v[0]} ms")'
