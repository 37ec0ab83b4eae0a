# Shared by the HTTP benchmarks of issues 13 and 14 (sourced): builds the release binary
# and the bare axum baseline unless BENCH_SKIP_BUILD is set, starts both on free ports
# over a temp data dir (SQLite, or DATABASE_URL), and on exit prints the server's log
# lines (a clean run logs only the simulated-provider warnings) and removes the data.
# PLINTH_BIN runs another build of plinth (default ./target/release/plinth).
# Sets DATA, DB, P (plinth's URL), B (the baseline's); defines `json PATH CURL-ARGS...`,
# `admin_key EMAIL` (an account raised to level 100 through the CLI), `site_owner EMAIL`
# and `kv_seed KEY` (the KV benchmarks' namespace `bench` with keys k1..k1000).
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
[ -n "${BENCH_SKIP_BUILD:-}" ] || cargo build --release --bin plinth --example baseline -p plinth >/dev/null 2>&1
DATA=$(mktemp -d)
DB=${DATABASE_URL:-sqlite://$DATA/plinth.db}
cleanup() {
  kill "${PLINTH_PID:-}" "${BASE_PID:-}" 2>/dev/null || true
  [ -s "$DATA/err" ] && { echo "server log:"; sed -E 's/^[^ ]+ //' "$DATA/err" | cut -c1-220 | sort | uniq -c | sort -rn | head -8; }
  rm -rf "$DATA"
}
trap cleanup EXIT
export PLINTH_RATE_LIMIT_MULTIPLIER=100000000 RUST_LOG=warn
"${PLINTH_BIN:-./target/release/plinth}" serve --listen 127.0.0.1:0 --data-dir "$DATA" --database-url "$DB" >"$DATA/out" 2>"$DATA/err" &
PLINTH_PID=$!
./target/release/examples/baseline 127.0.0.1:0 >"$DATA/base" &
BASE_PID=$!
for _ in $(seq 1 100); do
  grep -q listening "$DATA/out" 2>/dev/null && grep -q listening "$DATA/base" 2>/dev/null && break
  sleep 0.1
done
P=$(sed -n 's/.*listening on //p' "$DATA/out")
B=$(sed -n 's/.*listening on //p' "$DATA/base")
json() { curl -s "$P$1" -H 'content-type: application/json' "${@:2}"; }
key_of() { python3 -c 'import sys, json; print(json.load(sys.stdin)["user"]["key"])'; }
set_level() { # email level
  "${PLINTH_BIN:-./target/release/plinth}" users set-level --email "$1" --level "$2" --data-dir "$DATA" --database-url "$DB" >/dev/null
}
site_owner() { # email: sets OWNER (a verified account's key) and SITE (its new analytics site)
  OWNER=$(json /api/users/authenticate -d "{\"email\":\"$1\",\"password\":\"pw\"}" | key_of)
  set_level "$1" 10
  sleep 6 # the 5 s caller cache
  SITE=$(json /api/analytics/sites/create -H "x-api-key: $OWNER" -d '{"name":"bench"}' |
    python3 -c 'import sys, json; print(json.load(sys.stdin)["data"]["id"])')
}
admin_key() { # email: a platform admin's key (waits out the 5 s caller cache)
  json /api/users/authenticate -d "{\"email\":\"$1\",\"password\":\"pw\"}" >/dev/null
  set_level "$1" 100
  sleep 6
  json /api/users/authenticate -d "{\"email\":\"$1\",\"password\":\"pw\"}" | key_of
}
kv_seed() { # admin key: namespace `bench` with 1,000 entries k1..k1000 (bench/kv_get.lua reads them)
  json /api/kv/namespaces/create -H "x-api-key: $1" -d '{"namespace":"bench"}' >/dev/null
  seq 1 1000 | xargs -P 4 -I{} curl -s -o /dev/null "$P/api/kv/entries/create" -H 'content-type: application/json' \
    -H "x-api-key: $1" -d '{"namespace":"bench","key":"k{}","value":"initial"}'
}
