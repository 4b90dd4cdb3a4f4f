#!/usr/bin/env bash
# Every fuzz target for SECONDS (default 600), FAN at a time, corpus kept in corpus/<target>.
set -u
cd "$(dirname "$0")"
SECONDS_EACH=${1:-600}
FAN=${2:-4}
targets=(link_frame data_packet neighbour_data envelope sealed_open control_request control_response frame_prefix)
mkdir -p logs
i=0
for t in "${targets[@]}"; do
  mkdir -p corpus/$t
  nice -n 19 cargo +nightly fuzz run -O $t corpus/$t -- -max_total_time=$SECONDS_EACH -print_final_stats=1 > logs/$t.log 2>&1 &
  i=$((i+1))
  if [ $((i % FAN)) -eq 0 ]; then wait; fi
done
wait
