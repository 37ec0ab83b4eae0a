#!/usr/bin/env bash
# Token checkouts per second over HTTP (issue 13): 64 connections, 64 funded buyers, one
# unit per order, spread over 1,000 items; then one hot item until it sells out, with
# the count sold checked against the stock. The bare axum baseline runs in the same
# sitting for the ratio. SQLite by default; DATABASE_URL=postgres://... for PostgreSQL.
# Usage: bench/checkout.sh [duration, default 10s] [hot item units, default 5000]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
HOT=${2:-5000}
ITEMS=1000
. bench/common.sh

# Buyers (level 10), and the seller: a platform admin who funds them by vendor
# distribution and owns the shop.
echo "creating 64 buyers, $ITEMS items and a hot item of $HOT units..."
for i in $(seq 1 64); do
  json /api/users/authenticate -d "{\"email\":\"buyer$i@bench.example\",\"password\":\"pw\"}" >/dev/null
  set_level "buyer$i@bench.example" 10
done
ADMIN=$(admin_key seller@bench.example) # also waits out the caller cache for the buyers
DOMAIN=shop.bench.example
json /api/organizations/create -H "x-api-key: $ADMIN" -d "{\"domain\":\"$DOMAIN\"}" >/dev/null
for i in $(seq 1 64); do
  json /api/users/authenticate -d "{\"email\":\"buyer$i@bench.example\",\"password\":\"pw\"}" | key_of >>"$DATA/keys"
  json /api/credits/vendor-distribution-to-email -H "x-api-key: $ADMIN" \
    -d "{\"email\":\"buyer$i@bench.example\",\"vendorId\":\"bench\",\"amount_cents\":10000000}" >/dev/null
done
seq 1 "$ITEMS" | xargs -P 4 -I{} curl -s -o /dev/null "$P/api/inventory/create" -H 'content-type: application/json' \
  -H "x-api-key: $ADMIN" -d "{\"domain\":\"$DOMAIN\",\"sku\":\"SKU-{}\",\"slug\":\"sku-{}\",\"price_cents\":100,\"price_tokens\":1,\"unit_count\":100}"
json /api/inventory/create -H "x-api-key: $ADMIN" \
  -d "{\"domain\":\"$DOMAIN\",\"sku\":\"HOT\",\"slug\":\"hot\",\"price_cents\":100,\"price_tokens\":1,\"unit_count\":$HOT}" >/dev/null
balances() { # the sum of the buyers' balances
  while read -r k; do curl -s "$P/api/credits/balance" -H "x-api-key: $k"; echo; done <"$DATA/keys" |
    python3 -c 'import sys, json; print(sum(json.loads(l)["balance"] for l in sys.stdin if l.strip()))'
}
BEFORE=$(balances)

run() { # name, then environment for the script
  local name=$1 out rps
  shift
  out=$(env KEYS_FILE="$DATA/keys" DOMAIN="$DOMAIN" "$@" wrk -t2 -c64 -d"$DUR" --latency -s bench/checkout.lua "$P")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  printf '%-32s %10s req/s   p50 %8s   p99 %8s   %s\n' "$name" "$rps" \
    "$(awk '$1 == "50%" {print $2}' <<<"$out")" "$(awk '$1 == "99%" {print $2}' <<<"$out")" \
    "$(grep '^statuses' <<<"$out")"
  echo "$rps" >"$DATA/rps.$name"
}
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); database: ${DB%%:*}"
echo "command: bench/checkout.sh $DUR $HOT (wrk -t2 -c64 -d$DUR -s bench/checkout.lua)"
out=$(wrk -t2 -c64 -d"$DUR" "$B/")
echo "baseline (bare axum)             $(awk '/Requests\/sec/ {print $2}' <<<"$out") req/s"
echo "$(awk '/Requests\/sec/ {print $2}' <<<"$out")" >"$DATA/rps.baseline"
run "checkout, 1,000 items" ITEMS=$ITEMS
HOT_START=$(date +%s.%N)
run "checkout, one hot item" SKU=HOT
AFTER=$(balances)
python3 - "$DATA" "$BEFORE" "$AFTER" "$HOT" "$P" "$ADMIN" "$DOMAIN" "$HOT_START" <<'PY'
import sys, json, pathlib, urllib.request
from datetime import datetime
d, before, after, hot, base, admin, domain, start = sys.argv[1:]
d = pathlib.Path(d)
r = {n: float((d / f"rps.{n}").read_text()) for n in ("baseline", "checkout, 1,000 items")}
def call(path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, headers={"x-api-key": admin, "content-type": "application/json"})
    return json.load(urllib.request.urlopen(req))
orders = call(f"/api/marketplace/orders?domain={domain}&limit=1")
found = call("/api/inventory/search", {"domain": domain, "search": {"keywords": "hot"}})["data"]
item = next(i for i in found if i["sku"] == "HOT")
units = call(f"/api/inventory/{item['id']}?domain={domain}")["data"]["units"]
sold = sum(1 for u in units if u["status"] == "sold")
last = datetime.fromisoformat(orders["data"][0]["created_at"].replace("Z", "+00:00")).timestamp()
spent = int(before) - int(after)
print(f"orders written: {orders['total']}; tokens spent: {spent} (one per order: {spent == orders['total']})")
print(f"hot item: {sold} of {hot} units sold, {item['available_count']} left; "
      f"sold out in {last - float(start):.2f} s = {sold / (last - float(start)):.0f} orders/s")
print(f"checkout (1,000 items)/baseline = {r['checkout, 1,000 items'] / r['baseline']:.3f}")
PY
