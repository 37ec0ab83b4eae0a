#!/usr/bin/env bash
# Hostile slide updates (issue 10, finding H4): GET /api/users/viewer latency with wrk,
# first on a quiet server, then while two clients send slide-operation batches in a loop
# (26,000 inserts, refused by count; 500 inserts, refused at the slide cap), in one run.
# Also reports how long each hostile request took. SQLite; release build.
# Usage: bench/h4.sh [duration, default 10s]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
[ -n "${BENCH_SKIP_BUILD:-}" ] || cargo build --release --bin plinth -p plinth >/dev/null 2>&1
DATA=$(mktemp -d)
cleanup() { kill "${PLINTH_PID:-}" "${HOSTILE_PID:-}" 2>/dev/null || true; rm -rf "$DATA"; }
trap cleanup EXIT
PLINTH_RATE_LIMIT_MULTIPLIER=100000000 RUST_LOG=warn \
  ./target/release/plinth serve --listen 127.0.0.1:0 --data-dir "$DATA" >"$DATA/out" 2>"$DATA/err" &
PLINTH_PID=$!
for _ in $(seq 1 100); do grep -q listening "$DATA/out" 2>/dev/null && break; sleep 0.1; done
P=$(sed -n 's/.*listening on //p' "$DATA/out")
KEY=$(curl -s "$P/api/users/authenticate" -H 'content-type: application/json' \
  -d '{"email":"h4@bench.example","password":"pw"}' |
  python3 -c 'import sys, json; print(json.load(sys.stdin)["user"]["key"])')
./target/release/plinth users set-level --email h4@bench.example --level 10 \
  --data-dir "$DATA" >/dev/null
sleep 6 # the account cache expires after 5 s

echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); command: bench/h4.sh $DUR"
lat() {
  wrk -t1 -c8 -d"$DUR" --latency -H "x-api-key: $KEY" "$P/api/users/viewer" |
    awk '/Requests\/sec/ {rps=$2} /^ +50%/ {p50=$2} /^ +99%/ {p99=$2} END {print rps, p50, p99}'
}
read -r q_rps q_p50 q_p99 < <(lat)
echo "quiet:        viewer $q_rps req/s, p50 $q_p50, p99 $q_p99"
python3 bench/h4.py "$P" "$KEY" "$DATA/hostile.txt" &
HOSTILE_PID=$!
sleep 2
read -r h_rps h_p50 h_p99 < <(lat)
kill "$HOSTILE_PID" 2>/dev/null || true
wait "$HOSTILE_PID" 2>/dev/null || true
echo "under attack: viewer $h_rps req/s, p50 $h_p50, p99 $h_p99"
python3 - "$q_rps" "$h_rps" <<'PY'
import sys
print(f"viewer throughput under attack / quiet = {float(sys.argv[2]) / float(sys.argv[1]):.2f}")
PY
cat "$DATA/hostile.txt"
