#!/usr/bin/env bash
# Telemetry ingestion over HTTP (issue 15): POST /api/telemetry/events with batches of
# 25 events (bench/telemetry_events.lua), rate limits lifted, against a raw batched insert
# of the same rows into the same table of the same database file in the same run
# (bench/telemetry_raw.py). SQLite only (the raw baseline writes the file directly).
# Usage: bench/telemetry.sh [duration, default 10s] [connections, default 32]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
CONN=${2:-32}
unset DATABASE_URL
export PLINTH_TELEMETRY_PRODUCTS=bench,raw
. bench/common.sh
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); database: sqlite"
echo "command: bench/telemetry.sh $DUR $CONN (wrk -t2 -c$CONN -d$DUR)"
out=$(wrk -t2 -c"$CONN" -d"$DUR" --latency -s bench/telemetry_events.lua "$P")
rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
grep statuses <<<"$out"
stored=$(python3 -c "import sqlite3; print(sqlite3.connect('$DATA/plinth.db').execute(\"SELECT COUNT(*) FROM telemetry_events WHERE product_id='bench'\").fetchone()[0])")
raw=$(python3 bench/telemetry_raw.py "$DATA/plinth.db" 200000)
python3 - "$rps" "$stored" "$raw" <<'PY'
import sys
rps, stored, raw = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
events = rps * 25
print(f"HTTP batches {rps:,.0f}/s = {events:,.0f} events/s ({stored:,} events stored)")
print(f"raw batched insert {raw:,.0f} rows/s; HTTP / raw = {events / raw:.2f}")
PY
awk '$1 == "50%" || $1 == "99%" {print "latency", $1, $2}' <<<"$out"
