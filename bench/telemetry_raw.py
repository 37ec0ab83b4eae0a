"""The raw baseline of bench/telemetry.sh: the same rows (25 per multi-row INSERT ... ON
CONFLICT DO NOTHING, like the server's statements) written straight into the same
telemetry_events table of the same SQLite file, with the server's pragmas (WAL,
synchronous=NORMAL), 40 statements per transaction. Prints rows per second.
Usage: telemetry_raw.py DB_FILE ROWS"""
import json, sqlite3, sys, time, uuid

path, total = sys.argv[1], int(sys.argv[2])
db = sqlite3.connect(path, isolation_level=None)
db.execute("PRAGMA journal_mode=WAL")
db.execute("PRAGMA synchronous=NORMAL")
db.execute("PRAGMA busy_timeout=10000")
cols = 9
sql = ("INSERT INTO telemetry_events (product_id, event_id, event_name, client_id, user_id, "
       "day, occurred_at, received_at, data) VALUES "
       + ", ".join(["(" + ", ".join("?" * cols) + ")"] * 25)
       + " ON CONFLICT (product_id, event_id) DO NOTHING")
run = uuid.uuid4().hex[:8]
data = json.dumps({"app_version": "1.2", "os": "linux", "gpu": True})
now = "2026-11-23T12:00:00.000000Z"
# Rows are prepared before the clock starts: the server's work of parsing JSON is not in
# this baseline, only the database's.
statements = []
for s in range(total // 25):
    params = []
    for i in range(25):
        params += ["raw", f"{run}-{s}-{i}", "app_opened", f"c{s % 20}", None,
                   "2026-11-21", "2026-11-21T12:00:00Z", now, data]
    statements.append(params)
start = time.perf_counter()
for k in range(0, len(statements), 40):
    db.execute("BEGIN IMMEDIATE")
    for params in statements[k:k + 40]:
        db.execute(sql, params)
    db.execute("COMMIT")
elapsed = time.perf_counter() - start
print(f"{len(statements) * 25 / elapsed:.0f}")
