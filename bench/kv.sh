#!/usr/bin/env bash
# Key-value store over HTTP (issue 15): `entries/get` and `entries/update` (a put of an
# existing key) at 32 connections over 1,000 keys, against the bare axum baseline in the
# same sitting. SQLite by default; DATABASE_URL=postgres://... for PostgreSQL.
# Usage: bench/kv.sh [duration, default 10s]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
. bench/common.sh
ADMIN=$(admin_key kv@bench.example)
kv_seed "$ADMIN"
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); database: ${DB%%:*}"
echo "command: bench/kv.sh $DUR (wrk -t2 -c32 -d$DUR)"
base=$(wrk -t2 -c32 -d"$DUR" "$B/" | awk '/Requests\/sec/ {print $2}')
echo "baseline (bare axum)      $base req/s"
# The same bare axum answering a POST with a small JSON body (read and parsed): what the
# request's shape costs before any of plinth runs.
post=$(wrk -t2 -c32 -d"$DUR" -s bench/baseline_post.lua "$B" | awk '/Requests\/sec/ {print $2}')
echo "baseline POST /echo       $post req/s   /baseline $(python3 -c "print(f'{$post / $base:.3f}')")"
for op in get put; do
  out=$(KEY=$ADMIN wrk -t2 -c32 -d"$DUR" --latency -s "bench/kv_$op.lua" "$P")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  printf '%-10s %10s req/s   p50 %8s   p99 %8s   non-2xx %s   /baseline %s\n' "$op" "$rps" \
    "$(awk '$1 == "50%" {print $2}' <<<"$out")" "$(awk '$1 == "99%" {print $2}' <<<"$out")" \
    "$(awk '/Non-2xx/ {print $5}' <<<"$out")" "$(python3 -c "print(f'{$rps / $base:.3f}')")"
  echo "           /baseline POST $(python3 -c "print(f'{$rps / $post:.3f}')")"
done
