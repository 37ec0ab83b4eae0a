#!/usr/bin/env bash
# Hostile clients (issue 41): a normal client's GET /api/users/viewer (wrk, 2 threads,
# 16 connections, 10 s) alone, then again while bench/hostile.py holds 200 half-sent
# heads, 200 anonymous 10 MiB uploads trickled at 100 B/s and 16 connections flooding
# 60 KiB anonymous bodies; prints both throughputs and latencies and the server's
# resident memory before, during and after. Release build, SQLite (or DATABASE_URL).
#   bench/hostile.sh
set -euo pipefail
cd "$(dirname "$0")/.."
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
[ -n "${BENCH_SKIP_BUILD:-}" ] || cargo build --release --bin plinth >/dev/null 2>&1
DATA=$(mktemp -d)
DB=${DATABASE_URL:-sqlite://$DATA/plinth.db}
trap 'kill "${PID:-}" 2>/dev/null || true; rm -rf "$DATA"' EXIT
# Attackers and the normal client all come from 127.0.0.1: the per-address cap (256)
# would refuse them; the run stands for many addresses.
export PLINTH_MAX_CONNECTIONS_PER_CLIENT=4096 PLINTH_RATE_LIMIT_MULTIPLIER=100000000 RUST_LOG=warn
./target/release/plinth serve --listen 127.0.0.1:0 --data-dir "$DATA" --database-url "$DB" >"$DATA/out" 2>"$DATA/err" &
PID=$!
for _ in $(seq 1 100); do grep -q listening "$DATA/out" 2>/dev/null && break; sleep 0.1; done
P=$(sed -n 's/.*listening on //p' "$DATA/out")
mem() { awk '/^VmRSS|^RssAnon/ {printf "%s %.1f MB  ", $1, $2/1024} END {print ""}' "/proc/$PID/status"; }
KEY=$(curl -s "$P/api/users/authenticate" -H 'content-type: application/json' \
  -d '{"email":"hostile@bench.example","password":"hostile-bench-pw"}' |
  python3 -c 'import sys, json; print(json.load(sys.stdin)["user"]["key"])')
viewer() { wrk -t2 -c16 -d10s --latency -H "x-api-key: $KEY" "$P/api/users/viewer" |
  grep -E "Requests/sec|50%|99%|Non-2xx|Socket errors" | tr -s ' ' | tr '\n' ' '; echo; }
sleep 1
echo "idle:"; mem
echo "viewer alone:"; viewer
python3 bench/hostile.py "$P" 16 &
ATT=$!
sleep 3
echo "viewer under attack:"; viewer
echo "during the attack:"; mem
wait $ATT
sleep 2
echo "after:"; mem
