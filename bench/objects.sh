#!/usr/bin/env bash
# Security round 2, M2: anonymous reads of a large public object in constant memory.
# 16 concurrent readers (each limited to 40 MB/s, as slow clients are) of a 200 MB object
# under /public; the server's resident memory is sampled every 50 ms. Target: peak RSS
# under 150 MB (reading whole objects cost the object's size per reader before).
# Usage: bench/objects.sh [readers] [MB]   (BENCH_SKIP_BUILD=1 to reuse target/release)
set -euo pipefail
cd "$(dirname "$0")/.."
READERS=${1:-16}
MB=${2:-200}
source bench/common.sh
mkdir -p "$DATA/objects/public/bench"
head -c "$((MB << 20))" /dev/urandom >"$DATA/objects/public/bench/big.bin"
rss() { awk '/VmRSS/ {print $2}' "/proc/$PLINTH_PID/status"; }
idle=$(rss)
peak=$idle
start=$(date +%s.%N)
pids=()
for _ in $(seq 1 "$READERS"); do
  curl -s --limit-rate 40M -o /dev/null -w '%{http_code} %{size_download}\n' \
    "$P/public/bench/big.bin" >>"$DATA/codes" &
  pids+=($!)
done
while kill -0 "${pids[@]}" 2>/dev/null; do
  now=$(rss)
  [ "$now" -gt "$peak" ] && peak=$now
  sleep 0.05
done
wait "${pids[@]}" || true
secs=$(echo "$(date +%s.%N) - $start" | bc)
ok=$(grep -c "^200 $((MB << 20))$" "$DATA/codes" || true)
echo "objects: $READERS readers x $MB MB: $ok complete in ${secs}s"
echo "objects: RSS idle $((idle / 1024)) MB, peak $((peak / 1024)) MB (+$(((peak - idle) / 1024)) MB; target < 150 MB)"
