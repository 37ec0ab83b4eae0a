#!/usr/bin/env bash
# Deducts per second over HTTP (issue 5): 64 connections spread over N accounts, then on
# one hot account. SQLite by default; set DATABASE_URL=postgres://... for PostgreSQL.
# Every account is funded for the whole run (a 402 would be a drained account, not a
# failure), and the bare axum baseline answers the same shape of request (POST /echo, a
# small JSON body) at 64 connections in the same run.
# Usage: bench/credits.sh [duration, default 10s] [accounts, default 1000]
#   PERF=FILE also records the server under the spread load (`perf record -g`) into FILE
#   and counts its syscalls by kind (`perf stat`), for "where does the time go";
#   PERF_ARGS replaces `-g` (e.g. "--call-graph dwarf,16384": callers through Rust frames).
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
N=${2:-1000}
. bench/common.sh

echo "creating $N funded accounts..."
seq 1 "$N" | xargs -P 4 -I{} sh -c "curl -s '$P/api/users/authenticate' -H 'content-type: application/json' \
  -d '{\"email\":\"acct{}@bench.example\",\"password\":\"pw\"}'" |
  python3 -c 'import sys, json, re
for m in re.finditer(r"\"key\":\"(pk_[0-9a-f]+)\"", sys.stdin.read()): print(m.group(1))' >"$DATA/keys"
xargs -P 4 -I{} curl -s -o /dev/null "$P/api/credits/distribute-bonus" -H 'content-type: application/json' \
  -H "x-api-key: {}" -d '{"bonusName":"welcome"}' <"$DATA/keys"
curl -s "$P/api/users/authenticate" -H 'content-type: application/json' \
  -d '{"email":"acct1@bench.example","password":"pw"}' |
  python3 -c 'import sys, json; print(json.load(sys.stdin)["user"]["key"])' >"$DATA/hot"
# Fund the hot account through an admin's vendor distribution.
"${PLINTH_BIN:-./target/release/plinth}" users set-level --email acct1@bench.example --level 100 --data-dir "$DATA" --database-url "$DB" >/dev/null
sleep 6
curl -s -o /dev/null "$P/api/credits/vendor-distribution-to-email" -H 'content-type: application/json' \
  -H "x-api-key: $(cat "$DATA/hot")" -d '{"email":"acct1@bench.example","vendorId":"bench","amount_cents":100000000}'
# Enough for every account to take the whole run (the welcome bonus alone is 100 tokens).
seq 2 "$N" | xargs -P 4 -I{} curl -s -o /dev/null "$P/api/credits/vendor-distribution-to-email" \
  -H 'content-type: application/json' -H "x-api-key: $(cat "$DATA/hot")" \
  -d '{"email":"acct{}@bench.example","vendorId":"bench","amount_cents":1000000,"reference":"fund{}"}'

run() {
  local out rps non2xx
  out=$(KEYS_FILE=$2 wrk -t2 -c64 -d"$DUR" -s bench/deduct.lua "$P")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $5}' <<<"$out")
  printf '%-34s %10s req/s   non-2xx %s   /baseline %s\n' "$1" "$rps" "${non2xx:-0}" \
    "$(python3 -c "print(f'{$rps / $base:.3f}')")"
}
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); database: ${DB%%:*}"
echo "command: bench/credits.sh $DUR $N (wrk -t2 -c64 -d$DUR -s bench/deduct.lua)"
base=$(wrk -t2 -c64 -d"$DUR" -s bench/baseline_post.lua "$B" | awk '/Requests\/sec/ {print $2}')
printf '%-34s %10s req/s\n' "baseline (bare axum POST /echo)" "$base"
if [ -n "${PERF:-}" ]; then
  perf record -q ${PERF_ARGS:--g} -o "$PERF" -p "$PLINTH_PID" -- sleep 5 >/dev/null 2>&1 &
  perf stat -e 'syscalls:sys_enter_*' -p "$PLINTH_PID" -o "$PERF.stat" -- sleep 5 >/dev/null 2>&1 &
  # CPU seconds per thread over the same 5 s (a serial thread at 5.0 is saturated).
  (ticks() { for t in /proc/"$PLINTH_PID"/task/*; do
       echo "$(tr -d '\n' <"$t/comm")/${t##*/} $(awk '{print $14 + $15}' "$t/stat")"; done; }
   ticks >"$PERF.t0"; sleep 5; ticks >"$PERF.t1"
   paste "$PERF.t0" "$PERF.t1" | awk -v hz="$(getconf CLK_TCK)" \
     '{c = ($4 - $2) / hz; if (c > 0.05) printf "%-28s %.2f s\n", $1, c}' \
     >"$PERF.threads") &
fi
run "deduct, spread over $(wc -l <"$DATA/keys") accounts" "$DATA/keys"
run "deduct, one hot account" "$DATA/hot"
