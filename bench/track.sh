#!/usr/bin/env bash
# Analytics track ingestion over HTTP (issue 16): POST /api/analytics/track, one hit per
# request (bench/track_hits.lua), anonymous, rate limits lifted, against a raw batched
# insert of the same rows into the same table of the same file in the same run
# (bench/track_raw.py). SQLite only.
# Usage: bench/track.sh [duration, default 10s] [connections, default 32]
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${1:-10s}
CONN=${2:-32}
unset DATABASE_URL
. bench/common.sh
site_owner track@bench.example
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); database: sqlite"
echo "command: bench/track.sh $DUR $CONN (wrk -t2 -c$CONN -d$DUR)"
out=$(SITE=$SITE wrk -t2 -c"$CONN" -d"$DUR" --latency -s bench/track_hits.lua "$P")
rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
grep statuses <<<"$out"
stored=$(python3 -c "import sqlite3; print(sqlite3.connect('$DATA/plinth.db').execute('SELECT COUNT(*) FROM analytics_events').fetchone()[0])")
raw=$(python3 bench/track_raw.py "$DATA/plinth.db" "$SITE" 200000)
python3 - "$rps" "$stored" "$raw" <<'PY'
import sys
rps, stored, raw = float(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
print(f"HTTP hits {rps:,.0f}/s ({stored:,} stored)")
print(f"raw batched insert {raw:,.0f} rows/s; HTTP / raw = {rps / raw:.2f}")
PY
awk '$1 == "50%" || $1 == "99%" {print "latency", $1, $2}' <<<"$out"
