#!/usr/bin/env bash
# Throughput with 1, 2 and 3 `plinth serve --no-workers` processes on one PostgreSQL
# database (issue 17), all on this machine: one wrk per process (2 threads, 32
# connections split evenly), summed; GET /api/users/viewer as a verified user (rate
# windows in the shared PostgreSQL store), then POST /api/credits/deduct spread over
# 200 funded accounts. Usage: DATABASE_URL=postgres://... bench/scaleout.sh [duration]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
: "${DATABASE_URL:?set DATABASE_URL=postgres://... (a database this script may fill)}"
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
[ -n "${BENCH_SKIP_BUILD:-}" ] || cargo build --release --bin plinth -p plinth >/dev/null 2>&1
DATA=$(mktemp -d)
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$DATA"; }
trap cleanup EXIT
export PLINTH_RATE_STORE=${PLINTH_RATE_STORE:-postgres} PLINTH_RATE_LIMIT_MULTIPLIER=100000000 RUST_LOG=warn PLINTH_MASTER_KEY=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
start() { # port
  ./target/release/plinth serve --no-workers --listen "127.0.0.1:$1" --data-dir "$DATA" \
    --database-url "$DATABASE_URL" >"$DATA/out.$1" 2>"$DATA/err.$1" &
  PIDS+=($!)
  for _ in $(seq 1 100); do grep -q listening "$DATA/out.$1" 2>/dev/null && return; sleep 0.1; done
  echo "server on $1 did not start"; cat "$DATA/err.$1"; exit 1
}
start 18181
P=http://127.0.0.1:18181
KEY=$(curl -s "$P/api/users/authenticate" -H 'content-type: application/json' \
  -d '{"email":"scale@bench.example","password":"pw"}' | python3 -c 'import sys, json; print(json.load(sys.stdin)["user"]["key"])')
./target/release/plinth users set-level --email scale@bench.example --level 10 --data-dir "$DATA" --database-url "$DATABASE_URL" >/dev/null
seq 1 200 | xargs -P 4 -I{} curl -s "$P/api/users/authenticate" -H 'content-type: application/json' \
  -d '{"email":"d{}@bench.example","password":"pw"}' |
  python3 -c 'import sys, re
for m in re.finditer(r"\"key\":\"(pk_[0-9a-f]+)\"", sys.stdin.read()): print(m.group(1))' >"$DATA/keys"
xargs -P 4 -I{} curl -s -o /dev/null "$P/api/credits/distribute-bonus" -H 'content-type: application/json' \
  -H "x-api-key: {}" -d '{"bonusName":"welcome"}' <"$DATA/keys"
# Enough tokens that no run drains an account (a bench database only: the ledger no
# longer sums to the balances).
psql "$DATABASE_URL" -qc "UPDATE credit_accounts SET balance = 1000000000" >/dev/null
sleep 6 # the published balances (5 s) see it
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); PostgreSQL $(psql "$DATABASE_URL" -Atc 'SHOW server_version' 2>/dev/null || echo '?')"
echo "command: bench/scaleout.sh $DUR"
ports=(18181 18182 18183)
for n in 1 2 3; do
  [ "$n" -gt 1 ] && start "${ports[$((n - 1))]}"
  sleep 1
  for what in viewer deduct; do
    c=$((32 / n))
    W=()
    for i in $(seq 0 $((n - 1))); do
      url=http://127.0.0.1:${ports[$i]}
      if [ "$what" = viewer ]; then
        wrk -t1 -c"$c" -d"$DUR" -H "x-api-key: $KEY" "$url/api/users/viewer" >"$DATA/w.$i" &
      else
        KEYS_FILE="$DATA/keys" wrk -t1 -c"$c" -d"$DUR" -s bench/deduct.lua "$url" >"$DATA/w.$i" &
      fi
      W+=($!)
    done
    wait "${W[@]}"
    total=$(cat "$DATA"/w.* | awk '/Requests\/sec/ {s += $2} END {printf "%.0f", s}')
    non2xx=$(cat "$DATA"/w.* | awk '/Non-2xx/ {s += $5} END {print s + 0}')
    printf '%d serve  %-7s %8s req/s   non-2xx %s\n' "$n" "$what" "$total" "$non2xx"
    rm -f "$DATA"/w.*
  done
done
