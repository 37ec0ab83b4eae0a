"""Seeds N things straight into plinth's SQLite database (its FTS5 triggers index them)
for the things-search benchmark, and writes the vocabulary to <vocab file> for the wrk
script. Titles are four words from a 2,000-word vocabulary (random 7-letter words, so one
word is never another's prefix): each word is in about 200 of 100,000 titles.
Usage: seed_things.py <plinth.db> <count> <vocab file>"""
import random, sqlite3, string, sys, uuid
from datetime import datetime, timedelta, timezone

db, n, vocab_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
random.seed(7)
vocab = sorted({"".join(random.choices(string.ascii_lowercase, k=7)) for _ in range(2000)})
CATEGORIES = ["furniture", "lighting", "textiles", "decor", "outdoor", "office"]
con = sqlite3.connect(db, timeout=30)
base = datetime(2026, 1, 1, tzinfo=timezone.utc)
rows = []
for i in range(n):
    title = " ".join(random.sample(vocab, 4))
    at = (base + timedelta(seconds=i)).isoformat()
    rows.append((str(uuid.uuid4()), title, random.choice(CATEGORIES), f"seed-{i}", "{}", at, at))
con.executemany(
    "INSERT INTO things (id, title, category, slug, data, created_at, updated_at) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)",
    rows,
)
con.commit()
with open(vocab_file, "w") as f:
    f.write("\n".join(vocab) + "\n")
print(f"seeded {n} things, {len(vocab)} words")
