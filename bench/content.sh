#!/usr/bin/env bash
# Content benchmarks (issue 12), one run, SQLite, loopback wrk:
#  - POST /api/posts/create with 32 clients (markdown parsed into editor nodes);
#  - GET /api/posts/public/{slug} (anonymous) against the bare axum baseline;
#  - GET /api/data/things/list/search at 100,000 things: p50 and p99 latency.
# Usage: bench/content.sh [duration, default 10s]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
[ -n "${BENCH_SKIP_BUILD:-}" ] || cargo build --release --bin plinth --example baseline -p plinth >/dev/null 2>&1
DATA=$(mktemp -d)
cleanup() { kill "${PLINTH_PID:-}" "${BASE_PID:-}" 2>/dev/null || true; rm -rf "$DATA"; }
trap cleanup EXIT

export PLINTH_RATE_LIMIT_MULTIPLIER=100000000 RUST_LOG=warn
./target/release/plinth serve --listen 127.0.0.1:0 --data-dir "$DATA" >"$DATA/out" 2>"$DATA/err" &
PLINTH_PID=$!
./target/release/examples/baseline 127.0.0.1:0 >"$DATA/base" &
BASE_PID=$!
for _ in $(seq 1 100); do
  grep -q listening "$DATA/out" 2>/dev/null && grep -q listening "$DATA/base" 2>/dev/null && break
  sleep 0.1
done
P=$(sed -n 's/.*listening on //p' "$DATA/out")
B=$(sed -n 's/.*listening on //p' "$DATA/base")

KEY=$(curl -s "$P/api/users/authenticate" -H 'content-type: application/json' \
  -d '{"email":"bench@example.com","password":"bench"}' |
  python3 -c 'import sys, json; print(json.load(sys.stdin)["user"]["key"])')
# A verified (level 10) author: rate windows are still counted, only the limit is lifted.
./target/release/plinth users set-level --email bench@example.com --level 10 --data-dir "$DATA" >/dev/null
sleep 6 # the server's caller cache (5 s) sees the new level

wrk_run() { # name, then wrk arguments
  local name=$1
  shift
  local out
  out=$(wrk "$@")
  local rps p50 p99
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  printf '%-24s %10s req/s   p50 %8s   p99 %8s   non-2xx %s\n' "$name" "$rps" "${p50:--}" "${p99:--}" \
    "$(awk '/Non-2xx/ {print $5}' <<<"$out")"
  echo "$rps" >"$DATA/rps.$name"
}

echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F)"
echo "command: bench/content.sh $DUR"
wrk_run baseline -t2 -c32 -d"$DUR" --latency "$B/"
wrk_run post_create -t2 -c32 -d"$DUR" --latency -H "x-api-key: $KEY" -s bench/post_create.lua "$P/api/posts/create"
curl -s "$P/api/posts/create" -H "x-api-key: $KEY" -H 'content-type: application/json' \
  -d '{"type":"GENERAL","slug":"bench-post","fields":{"title":"Bench","public":true},"markdown":"# Bench\n\nRead me."}' >/dev/null
wrk_run post_by_slug -t2 -c32 -d"$DUR" --latency "$P/api/posts/public/bench-post"

ratios() {
  python3 - "$DATA" <<'PY'
import sys, pathlib
d = pathlib.Path(sys.argv[1])
r = {n: float((d / f"rps.{n}").read_text()) for n in ("baseline", "post_create", "post_by_slug")}
print(f"post_by_slug/baseline = {r['post_by_slug'] / r['baseline']:.2f}")
print(f"post_create = {r['post_create']:.0f}/s")
PY
}
# BENCH_POSTS_ONLY=1: posts only (no 100,000-thing corpus).
if [ -n "${BENCH_POSTS_ONLY:-}" ]; then ratios; exit 0; fi

python3 bench/seed_things.py "$DATA/plinth.db" 100000 "$DATA/vocab"
export VOCAB="$DATA/vocab"
wrk_run things_search_c1 -t1 -c1 -d"$DUR" --latency -s bench/things_search.lua "$P"
wrk_run things_search_c8 -t2 -c8 -d"$DUR" --latency -s bench/things_search.lua "$P"
ratios
