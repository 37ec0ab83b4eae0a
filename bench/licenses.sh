#!/usr/bin/env bash
# License validation per second over HTTP (issue 14): 32 connections over 10,000 keys,
# two machines per key (activated by the first calls), against the bare axum baseline
# in the same sitting. SQLite by default; DATABASE_URL=postgres://... for PostgreSQL.
# Usage: bench/licenses.sh [duration, default 10s]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
. bench/common.sh
ADMIN=$(admin_key seller@bench.example)
json /api/organizations/create -H "x-api-key: $ADMIN" -d '{"domain":"licenses.bench.example"}' >/dev/null
json /api/inventory/create -H "x-api-key: $ADMIN" -d '{"domain":"licenses.bench.example","sku":"APP","slug":"app","price_cents":4900,
  "data":{"license_product_id":"bench-app","license_activations_allowed":3}}' >/dev/null
echo "minting 10,000 keys..."
for _ in $(seq 1 100); do
  json /api/licenses/create -H "x-api-key: $ADMIN" -d '{"domain":"licenses.bench.example","sku":"APP","count":100}' |
    python3 -c 'import sys, json; print("\n".join(l["key"] for l in json.load(sys.stdin)["data"]))' >>"$DATA/keys"
done
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); database: ${DB%%:*}; keys: $(wc -l <"$DATA/keys")"
echo "command: bench/licenses.sh $DUR (wrk -t2 -c32 -d$DUR -s bench/validate.lua)"
base=$(wrk -t2 -c32 -d"$DUR" "$B/" | awk '/Requests\/sec/ {print $2}')
echo "baseline (bare axum)      $base req/s"
for run in "pass 1 (activating)" "pass 2" "pass 3 (steady state)"; do
  out=$(KEYS_FILE="$DATA/keys" wrk -t2 -c32 -d"$DUR" --latency -s bench/validate.lua "$P")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  printf '%-26s %10s req/s   p50 %8s   p99 %8s   %s   /baseline %s\n' "$run" "$rps" \
    "$(awk '$1 == "50%" {print $2}' <<<"$out")" "$(awk '$1 == "99%" {print $2}' <<<"$out")" \
    "$(grep '^codes' <<<"$out")" "$(python3 -c "print(f'{$rps / $base:.3f}')")"
done
