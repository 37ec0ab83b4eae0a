#!/usr/bin/env bash
# Download redeems per second over HTTP (issue 14): 32 connections over 1,000 links of
# 1,000,000 downloads each (every answer a 302 to a presigned URL of the link's clone),
# against the bare axum baseline in the same sitting; local object store. SQLite by
# default; DATABASE_URL=postgres://... for PostgreSQL.
# Usage: bench/downloads.sh [duration, default 10s]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
. bench/common.sh
ADMIN=$(admin_key seller@bench.example)
ORG=$(json /api/organizations/create -H "x-api-key: $ADMIN" -d '{"domain":"downloads.bench.example"}' |
  python3 -c 'import sys, json; b = json.load(sys.stdin); print((b.get("data") or b.get("organization") or b)["id"])')
mkdir -p "$DATA/objects/catalog/$ORG"
head -c 100000 /dev/urandom >"$DATA/objects/catalog/$ORG/asset.bin"
echo "creating 1,000 links..."
seq 1 1000 | xargs -P 4 -I{} curl -s "$P/api/downloads/create" -H 'content-type: application/json' -H "x-api-key: $ADMIN" \
  -d "{\"domain\":\"downloads.bench.example\",\"source_s3_key\":\"catalog/$ORG/asset.bin\",\"max_downloads\":1000}" |
  python3 -c 'import sys, re; [print(t) for t in re.findall(r"\"token\":\"(dl_[0-9a-f]+)\"", sys.stdin.read())]' >"$DATA/tokens"
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); database: ${DB%%:*}; links: $(wc -l <"$DATA/tokens")"
echo "command: bench/downloads.sh $DUR (wrk -t2 -c32 -d$DUR -s bench/redeem.lua)"
base=$(wrk -t2 -c32 -d"$DUR" "$B/" | awk '/Requests\/sec/ {print $2}')
echo "baseline (bare axum)      $base req/s"
out=$(TOKENS_FILE="$DATA/tokens" wrk -t2 -c32 -d"$DUR" --latency -s bench/redeem.lua "$P")
rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
printf '%-26s %10s req/s   p50 %8s   p99 %8s   %s   /baseline %s\n' "redeem" "$rps" \
  "$(awk '$1 == "50%" {print $2}' <<<"$out")" "$(awk '$1 == "99%" {print $2}' <<<"$out")" \
  "$(grep '^statuses' <<<"$out")" "$(python3 -c "print(f'{$rps / $base:.3f}')")"
