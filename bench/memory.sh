#!/usr/bin/env bash
# Memory of a serving process (issue 41): resident memory idle, and after 10,000 mixed
# requests and 100 slide exports. Release build, SQLite (or DATABASE_URL), embedded
# workers, with whatever fonts the machine has (install fonts-noto-cjk,
# fonts-noto-color-emoji and fonts-noto-core to measure the worst case).
#   bench/memory.sh            # prints idle and loaded VmRSS / RssAnon in MB
set -euo pipefail
cd "$(dirname "$0")/.."
[ -n "${BENCH_SKIP_BUILD:-}" ] || cargo build --release --bin plinth >/dev/null 2>&1
DATA=$(mktemp -d)
DB=${DATABASE_URL:-sqlite://$DATA/plinth.db}
trap 'kill "${PID:-}" 2>/dev/null || true; rm -rf "$DATA"' EXIT
export PLINTH_RATE_LIMIT_MULTIPLIER=100000000 RUST_LOG=warn
./target/release/plinth serve --listen 127.0.0.1:0 --data-dir "$DATA" --database-url "$DB" >"$DATA/out" 2>"$DATA/err" &
PID=$!
for _ in $(seq 1 100); do grep -q listening "$DATA/out" 2>/dev/null && break; sleep 0.1; done
P=$(sed -n 's/.*listening on //p' "$DATA/out")
mem() { awk '/^VmRSS|^RssAnon|^RssFile/ {printf "%s %.1f MB  ", $1, $2/1024} END {print ""}' "/proc/$PID/status"; }
sleep 10
echo "idle (10 s after start):"; mem
# An administrator drives the exports (no per-account cap on live renders).
python3 -c '
import json, sys, urllib.request
req = urllib.request.Request(sys.argv[1] + "/api/users/authenticate",
    json.dumps({"email": "mem@bench.example", "password": "memory-bench-pw"}).encode(),
    {"content-type": "application/json"})
print(json.load(urllib.request.urlopen(req))["user"]["key"])' "$P" >"$DATA/key"
./target/release/plinth users set-level --email mem@bench.example --level 100 --data-dir "$DATA" --database-url "$DB" >/dev/null
sleep 6 # the caller cache
python3 bench/memory_load.py "$P" "$(cat "$DATA/key")"
sleep 2
echo "after 10,000 requests and 100 exports:"; mem
sleep 30
echo "30 s later:"; mem
