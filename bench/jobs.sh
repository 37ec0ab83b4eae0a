#!/usr/bin/env bash
# Job notification benchmark (issue 34): queue pickup, how soon waiting clients hear of a
# job's end with 1,000 of them waiting, the viewer's throughput while 1,000 wait, and
# 1,000 completion callbacks to a receiver that fails the first delivery of every tenth.
# SQLite by default; DATABASE_URL=postgres://... for PostgreSQL; SPLIT=1 runs the
# workers in a second process (`plinth worker`) so wake-ups cross processes.
# Usage: bench/jobs.sh [WAITERS, default 1000]
set -euo pipefail
cd "$(dirname "$0")/.."
WAITERS=${1:-1000}
# PROFILE=debug measures the debug build (no release build needed; slower, so the
# figures are upper bounds).
PROFILE=${PROFILE:-release}
T=./target/$PROFILE
if [ -z "${BENCH_SKIP_BUILD:-}" ]; then
  flag=$([ "$PROFILE" = release ] && echo --release || true)
  cargo build $flag --bin plinth --example jobs_bench -p plinth >/dev/null 2>&1
fi
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
ulimit -n 65536 2>/dev/null || true
DATA=$(mktemp -d)
DB=${DATABASE_URL:-sqlite://$DATA/plinth.db}
cleanup() {
  kill "${PLINTH_PID:-}" "${WORKER_PID:-}" 2>/dev/null || true
  [ -s "$DATA/err" ] && { echo "server log:"; sed -E 's/^[^ ]+ //' "$DATA/err" | cut -c1-220 | sort | uniq -c | sort -rn | head -8; }
  rm -rf "$DATA"
}
trap cleanup EXIT
# The metrics token lets the bench see when every client is waiting (`plinth_job_waiters`).
export PLINTH_RATE_LIMIT_MULTIPLIER=100000000 RUST_LOG=warn PLINTH_CALLBACK_PRIVATE_NETWORKS=true \
  PLINTH_METRICS_TOKEN=jobs-bench
serve_flags=()
[ -n "${SPLIT:-}" ] && serve_flags=(--no-workers)
$T/plinth serve --listen 127.0.0.1:0 --data-dir "$DATA" --database-url "$DB" "${serve_flags[@]}" >"$DATA/out" 2>"$DATA/err" &
PLINTH_PID=$!
for _ in $(seq 1 100); do grep -q listening "$DATA/out" 2>/dev/null && break; sleep 0.1; done
P=$(sed -n 's/.*listening on //p' "$DATA/out")
if [ -n "${SPLIT:-}" ]; then
  $T/plinth worker --data-dir "$DATA" --database-url "$DB" >"$DATA/worker.out" 2>"$DATA/worker.err" &
  WORKER_PID=$!
  sleep 1
fi
json() { curl -s "$P$1" -H 'content-type: application/json' "${@:2}"; }
key_of() { python3 -c 'import sys, json; print(json.load(sys.stdin)["user"]["key"])'; }
admin_key() { # email: a platform admin's key (waits out the 5 s caller cache)
  json /api/users/authenticate -d "{\"email\":\"$1\",\"password\":\"pw\"}" >/dev/null
  $T/plinth users set-level --email "$1" --level 100 --data-dir "$DATA" --database-url "$DB" >/dev/null
  sleep 6
  json /api/users/authenticate -d "{\"email\":\"$1\",\"password\":\"pw\"}" | key_of
}
KEY=$(admin_key jobs@bench.example)
DECK=$(json /api/slides/create -H "x-api-key: $KEY" -d '{"markdown":"# Bench\n\nOne slide."}' |
  python3 -c 'import sys, json; print(json.load(sys.stdin)["id"])')
J=$T/examples/jobs_bench

echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); build: $PROFILE; database: ${DB%%:*}; workers: $([ -n "${SPLIT:-}" ] && echo "in another process" || echo "in the serve process")"
echo "command: ${SPLIT:+SPLIT=1 }bench/jobs.sh $WAITERS"
echo "== pickup (100 html exports, one at a time, each followed with ?wait=60)"
$J pickup "$P" "$KEY" "$DECK" 100
echo "== pickup by an idle worker (the same, each queued 100 ms after the previous one ended)"
$J pickup "$P" "$KEY" "$DECK" 100 100
echo "== $WAITERS clients waiting on 100 jobs"
$J wait "$P" "$KEY" "$DECK" 100 "$WAITERS"
echo "== viewer throughput (wrk -t2 -c32 -d10s), alone then with $WAITERS waiting"
viewer() { wrk -t2 -c32 -d10s -H "x-api-key: $KEY" "$P/api/users/viewer" | awk '/Requests\/sec/ {print $2}'; }
# Alone before and after, with the waiters between: the ratio is against the mean of the
# two, so drift on this machine shows rather than passing for an effect.
before=$(viewer)
$J hold "$P" "$KEY" "$DECK" "$WAITERS" 12 >"$DATA/hold" &
HOLD=$!
# Measured once they all wait (`hold` says so), not while their requests still arrive.
until grep -q holding "$DATA/hold" 2>/dev/null; do sleep 0.1; done
held=$(viewer)
wait $HOLD
cat "$DATA/hold"
after=$(viewer)
echo "viewer_rps_alone_before $before"
echo "viewer_rps_with_waiters $held"
echo "viewer_rps_alone_after $after"
python3 -c "print(f'viewer_ratio_with_over_alone {2 * $held / ($before + $after):.3f}')"
echo "== callbacks"
$J callbacks "$P" "$KEY" "$DECK" 1000
