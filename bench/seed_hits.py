"""Seeds N analytics events of one site straight into plinth's SQLite database for the
stats benchmark: spread evenly over the 30 days before now, labels from 200 pages
(`/p/0` ... `/p/199`, a few much more popular) and 20 custom events, 50,000 visitors.
Time-ordered ids like the server's.
Usage: seed_hits.py <plinth.db> <site id> <count>"""
import random, sqlite3, sys, time, uuid
from datetime import datetime, timedelta, timezone

db, site, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
random.seed(11)
con = sqlite3.connect(db, timeout=30)
con.execute("PRAGMA synchronous=NORMAL")
now = datetime.now(timezone.utc)
start = now - timedelta(days=30)
span = (now - start).total_seconds()
visitors = [str(uuid.uuid4()) for _ in range(50_000)]
labels = [f"/p/{i}" for i in range(200)] + [f"event_{i}" for i in range(20)]
weights = [1.0 / (i + 1) for i in range(len(labels))]
ms0 = int(start.timestamp() * 1000)
batch = []
for i in range(n):
    at = start + timedelta(seconds=span * i / n)
    ms = ms0 + int(span * 1000 * i / n)
    eid = str(uuid.UUID(int=(ms << 80) | (0x7 << 76) | random.getrandbits(76)))
    label = random.choices(labels, weights)[0]
    batch.append((eid, site, label, random.choice(visitors), None,
                  at.isoformat(timespec="microseconds")))
    if len(batch) == 50_000:
        con.executemany("INSERT INTO analytics_events (id, site_id, label, visitor_id, data, "
                        "created_at) VALUES (?, ?, ?, ?, ?, ?)", batch)
        con.commit()
        batch = []
if batch:
    con.executemany("INSERT INTO analytics_events (id, site_id, label, visitor_id, data, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?)", batch)
    con.commit()
con.execute("ANALYZE")
con.commit()
print(f"seeded {n} events")
