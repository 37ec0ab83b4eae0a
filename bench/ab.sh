#!/usr/bin/env bash
# The hot paths of two builds side by side, in the same sitting (issue 43's "no behaviour
# change" holds within 5 %): GET /api/users/viewer, POST /api/kv/entries/get and
# POST /api/credits/deduct on 500 accounts funded with 100 tokens each (a 402 once spent, alike in both), each binary in turn, ROUNDS times.
# Usage: bench/ab.sh BEFORE_BINARY AFTER_BINARY [duration, default 8s] [rounds, default 2]
set -euo pipefail
cd "$(dirname "$0")/.."
A=$1 B=$2 DUR=${3:-8s} ROUNDS=${4:-2}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); SQLite; wrk -t2 -c32 -d$DUR"
one() { # binary label
  local bin=$1 data p key out
  data=$(mktemp -d)
  PLINTH_RATE_LIMIT_MULTIPLIER=100000000 RUST_LOG=warn \
    "$bin" serve --listen 127.0.0.1:0 --data-dir "$data" >"$data/out" 2>"$data/err" &
  local pid=$!
  for _ in $(seq 1 100); do grep -q listening "$data/out" 2>/dev/null && break; sleep 0.1; done
  p=$(sed -n 's/.*listening on //p' "$data/out")
  j() { curl -s "$p$1" -H 'content-type: application/json' "${@:2}"; }
  j /api/users/authenticate -d '{"email":"ab@bench.example","password":"pw"}' >/dev/null
  "$bin" users set-level --email ab@bench.example --level 100 --data-dir "$data" >/dev/null
  sleep 6 # the caller cache
  key=$(j /api/users/authenticate -d '{"email":"ab@bench.example","password":"pw"}' |
    python3 -c 'import sys, json; print(json.load(sys.stdin)["user"]["key"])')
  j /api/kv/namespaces/create -H "x-api-key: $key" -d '{"namespace":"bench"}' >/dev/null
  seq 1 1000 | xargs -P 4 -I{} curl -s -o /dev/null "$p/api/kv/entries/create" \
    -H 'content-type: application/json' -H "x-api-key: $key" \
    -d '{"namespace":"bench","key":"k{}","value":"initial"}'
  seq 1 500 | xargs -P 4 -I{} curl -s "$p/api/users/authenticate" -H 'content-type: application/json' \
    -d '{"email":"d{}@bench.example","password":"pw"}' |
    python3 -c 'import sys, re
for m in re.finditer(r"\"key\":\"(pk_[0-9a-f]+)\"", sys.stdin.read()): print(m.group(1))' >"$data/keys"
  xargs -P 4 -I{} curl -s -o /dev/null "$p/api/credits/distribute-bonus" -H 'content-type: application/json' \
    -H "x-api-key: {}" -d '{"bonusName":"welcome"}' <"$data/keys"
  local v k d
  v=$(wrk -t2 -c32 -d"$DUR" -H "x-api-key: $key" "$p/api/users/viewer" | awk '/Requests\/sec/ {print $2}')
  k=$(KEY=$key wrk -t2 -c32 -d"$DUR" -s bench/kv_get.lua "$p" | awk '/Requests\/sec/ {print $2}')
  d=$(KEYS_FILE=$data/keys wrk -t2 -c32 -d"$DUR" -s bench/deduct.lua "$p" | awk '/Requests\/sec/ {print $2}')
  printf '%-8s viewer %9s   kv get %9s   deduct %9s req/s\n' "$2" "$v" "$k" "$d"
  kill $pid; wait $pid 2>/dev/null || true
  rm -rf "$data"
}
for r in $(seq 1 "$ROUNDS"); do
  one "$A" before
  one "$B" after
done
