#!/usr/bin/env bash
# Load benchmark (wrk, loopback only): the baseline (bare axum JSON handler from the same
# dependencies), GET /api/status and GET /api/users/viewer with a valid key, all on SQLite,
# measured in one run. Usage: bench/run.sh [duration, default 10s] [connections, default 32]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
CONN=${2:-32}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }

[ -n "${BENCH_SKIP_BUILD:-}" ] || cargo build --release --bin plinth --example baseline -p plinth >/dev/null 2>&1
DATA=$(mktemp -d)
cleanup() { kill "${PLINTH_PID:-}" "${METRICS_PID:-}" "${BASE_PID:-}" 2>/dev/null || true; rm -rf "$DATA"; }
trap cleanup EXIT

# The multiplier keeps the rate limiter counting (its cost is measured) without refusing.
PLINTH_RATE_LIMIT_MULTIPLIER=100000000 RUST_LOG=warn \
  ./target/release/plinth serve --listen 127.0.0.1:0 --data-dir "$DATA" >"$DATA/out" 2>"$DATA/err" &
PLINTH_PID=$!
# The same server with metrics recorded (issue 18: their cost on the hot path).
mkdir -p "$DATA/m"
PLINTH_RATE_LIMIT_MULTIPLIER=100000000 RUST_LOG=warn PLINTH_METRICS_TOKEN=bench \
  ./target/release/plinth serve --listen 127.0.0.1:0 --data-dir "$DATA/m" >"$DATA/m/out" 2>"$DATA/m/err" &
METRICS_PID=$!
./target/release/examples/baseline 127.0.0.1:0 >"$DATA/base" &
BASE_PID=$!
for _ in $(seq 1 100); do
  grep -q listening "$DATA/out" 2>/dev/null && grep -q listening "$DATA/base" 2>/dev/null &&
    grep -q listening "$DATA/m/out" 2>/dev/null && break
  sleep 0.1
done
P=$(sed -n 's/.*listening on //p' "$DATA/out")
B=$(sed -n 's/.*listening on //p' "$DATA/base")
M=$(sed -n 's/.*listening on //p' "$DATA/m/out")

key_of() {
  curl -s "$1/api/users/authenticate" -H 'content-type: application/json' \
    -d '{"email":"bench@example.com","password":"bench"}' |
    python3 -c 'import sys, json; print(json.load(sys.stdin)["user"]["key"])'
}
KEY=$(key_of "$P")
MKEY=$(key_of "$M")

run() { # name url [header] [wrk args...]
  local name=$1 url=$2 header=${3:-}
  shift 3 || shift $#
  local out
  if [ -n "$header" ]; then
    out=$(wrk -t2 -c"$CONN" -d"$DUR" -H "$header" "$@" "$url")
  else
    out=$(wrk -t2 -c"$CONN" -d"$DUR" "$@" "$url")
  fi
  local rps lat non2xx
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  lat=$(awk '/Latency/ {print $2}' <<<"$out")
  non2xx=$(awk '/Non-2xx/ {print $5}' <<<"$out")
  printf '%-28s %10s req/s   avg latency %8s   non-2xx %s\n' "$name" "$rps" "$lat" "${non2xx:-0}"
  echo "$rps" >"$DATA/rps.$name"
}

echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F)"
echo "command: bench/run.sh $DUR $CONN (wrk -t2 -c$CONN -d$DUR)"
run baseline "$B/"
run status "$P/api/status"
run viewer "$P/api/users/viewer" "x-api-key: $KEY"
# Metrics on, between two runs with them off.
run viewer_metrics "$M/api/users/viewer" "x-api-key: $MKEY"
run viewer_again "$P/api/users/viewer" "x-api-key: $KEY"
recorded=$(curl -s -H 'authorization: Bearer bench' "$M/metrics" |
  awk '/^plinth_http_requests_total\{route="\/api\/users\/viewer"/ {s += $2} END {print s + 0}')
echo "viewer answers counted in /metrics: $recorded"
# Sign-in of an existing account: argon2id (m=19 MiB, t=2, p=1) per request.
CONN_SAVED=$CONN; CONN=4
run authenticate "$P/api/users/authenticate" "" -s bench/authenticate.lua --latency
CONN=$CONN_SAVED
python3 - "$DATA" <<'PY'
import sys, pathlib
d = pathlib.Path(sys.argv[1])
names = ("baseline", "status", "viewer", "viewer_metrics", "viewer_again")
r = {n: float((d / f"rps.{n}").read_text()) for n in names}
for n in ("status", "viewer", "viewer_again"):
    print(f"{n}/baseline = {r[n] / r['baseline']:.2f}")
off = (r["viewer"] + r["viewer_again"]) / 2
print(f"viewer with metrics / without (mean of the two runs around it) = {r['viewer_metrics'] / off:.3f}")
PY
