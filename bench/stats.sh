#!/usr/bin/env bash
# Analytics stats over a large site (issue 16): seeds 1,000,000 events over 30 days
# (bench/seed_hits.py), rebuilds the rollups from them, and times POST /api/analytics/stats for the 30 days with 20 label
# patterns (and once more with include_labels), sequentially, reporting p50 and p99.
# Usage: bench/stats.sh [events, default 1000000] [requests, default 30]
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-1000000}
REQ=${2:-30}
unset DATABASE_URL
. bench/common.sh
site_owner stats@bench.example
python3 bench/seed_hits.py "$DATA/plinth.db" "$SITE" "$N"
# The events were written behind the server's back: roll them up as an operator would
# after an import (timed: it is also what an upgrade costs once).
t0=$(date +%s.%N)
./target/release/plinth analytics rebuild-rollups --data-dir "$DATA" --database-url "$DB"
echo "rebuild-rollups: $(python3 -c "print(f'{$(date +%s.%N) - $t0:.1f}')") s"
echo "machine: $(nproc) cores, $(uname -m), $(date -u +%F); database: sqlite; events: $N"
python3 - "$P" "$OWNER" "$SITE" "$REQ" "$DATA/plinth.db" <<'PY'
import json, sqlite3, statistics, sys, time, urllib.request
base, key, site, n, db = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
# Baseline in the same run: the least an answer from the raw events costs, one scan of the
# 30 days counting hits and distinct visitors (no buckets, no patterns).
con = sqlite3.connect(db)
scan = []
for _ in range(3):
    t = time.perf_counter()
    con.execute("SELECT COUNT(*), COUNT(DISTINCT visitor_id) FROM analytics_events "
                "WHERE site_id = ? AND created_at >= strftime('%Y-%m-%dT%H:%M:%f', 'now', '-30 days')",
                (site,)).fetchone()
    scan.append((time.perf_counter() - t) * 1000)
raw = statistics.median(scan)
print(f"{'baseline: raw scan of the 30 days':40s} p50 {raw:7.1f} ms")
patterns = [f"/p/{i}*" for i in range(15)] + ["event_*", "/p/1?0", "*launch*", "/p/19*", "/x/*"]
def timed(body):
    out = []
    for _ in range(n):
        req = urllib.request.Request(base + "/api/analytics/stats", json.dumps(body).encode(),
                                     {"content-type": "application/json", "x-api-key": key})
        t = time.perf_counter()
        with urllib.request.urlopen(req) as r:
            answer = json.load(r)
        out.append((time.perf_counter() - t) * 1000)
    out.sort()
    return out, answer
for name, body in [("30 days, 20 patterns", {"site_id": site, "labels": patterns}),
                   ("30 days, all events", {"site_id": site}),
                   ("30 days, 20 patterns + include_labels", {"site_id": site, "labels": patterns, "include_labels": True})]:
    ms, answer = timed(body)
    print(f"{name:40s} p50 {statistics.median(ms):7.1f} ms  p99 {ms[int(len(ms) * 0.99) - 1]:7.1f} ms  "
          f"(p50 / scan {statistics.median(ms) / raw:.3f})  hits {answer['totals']['hits']:,} visitors {answer['totals']['visitors']:,}")
PY
