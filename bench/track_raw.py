"""The raw baseline of bench/track.sh: the same rows (time-ordered ids) as single-row
INSERTs into the same analytics_events table of the same SQLite file, the server's
pragmas (WAL, synchronous=NORMAL), 64 rows per transaction (about the server's batch
under 32 clients), rows prepared before the clock starts. Prints rows per second.
Usage: track_raw.py DB_FILE SITE_ID ROWS"""
import json, sqlite3, sys, time, uuid

path, site, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
db.execute("PRAGMA busy_timeout=10000")
db.execute("PRAGMA foreign_keys=ON")
sql = ("INSERT INTO analytics_events (id, site_id, label, visitor_id, data, created_at, "
       "attachment_token_hash, attachment_token_expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
data = json.dumps({"ref": "bench"})
def uuid7(i):
    """Time-ordered like the server's event ids (UUID v7: milliseconds, then random)."""
    ms = time.time_ns() // 1_000_000
    return str(uuid.UUID(int=(ms << 80) | (0x7 << 76) | (uuid.uuid4().int & ((1 << 76) - 1))))


rows = [(uuid7(i), site, f"/page/{i % 50}", str(uuid.uuid4()), data,
         "2026-11-23T12:00:00.123456789+00:00", None, None) for i in range(total)]
start = time.perf_counter()
for k in range(0, total, 64):
    db.execute("BEGIN IMMEDIATE")
    db.executemany(sql, rows[k:k + 64])
    db.execute("COMMIT")
print(f"{total / (time.perf_counter() - start):.0f}")
