#!/usr/bin/env bash
# Issue 46: each hot path's server CPU per request beside its throughput, for the bare
# axum baseline (GET / and POST /echo), `GET /api/users/viewer` and KV `entries/get`.
# CPU is the server process's user + system time from /proc over the wrk run, divided by
# the requests answered: steadier than throughput ratios, which mix in wrk's share of the
# same two cores. SQLite by default (DATABASE_URL for PostgreSQL); PLINTH_BIN as common.sh.
# Usage: bench/cpu-per-request.sh [seconds per run, default 8] [rounds, default 2]
set -euo pipefail
cd "$(dirname "$0")/.."
D=${1:-8}
ROUNDS=${2:-2}
. bench/common.sh
ADMIN=$(admin_key kv@bench.example)
kv_seed "$ADMIN"
VIEWER=$(json /api/users/authenticate -d '{"email":"v@bench.example","password":"pw"}' | key_of)
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%FT%TZ); database: ${DB%%:*}"
echo "command: bench/cpu-per-request.sh $D $ROUNDS (wrk -t2 -c32 -d${D}s)"
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
measure() { # name pid wrk-args...
  local name=$1 pid=$2 t0 t1 out n rps
  shift 2
  t0=$(cpu "$pid")
  out=$(wrk -t2 -c32 -d"${D}s" "$@")
  t1=$(cpu "$pid")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  printf '%-10s %10s req/s  %6.1f us CPU/request  non-2xx %s\n' "$name" "$rps" \
    "$(python3 -c "print(($t1 - $t0) * 1e6 / $(getconf CLK_TCK) / $n)")" \
    "$(awk '/Non-2xx/ {print $5}' <<<"$out")"
}
for r in $(seq 1 "$ROUNDS"); do
  echo "round $r"
  measure baseGET "$BASE_PID" "$B/"
  measure basePOST "$BASE_PID" -s bench/baseline_post.lua "$B"
  measure viewer "$PLINTH_PID" -H "x-api-key: $VIEWER" "$P/api/users/viewer"
  KEY=$ADMIN measure kvget "$PLINTH_PID" -s bench/kv_get.lua "$P"
done
