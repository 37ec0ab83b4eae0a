#!/usr/bin/env python3
"""Slide export benchmark against a running plinth (driven by bench/slides.sh).

Creates a deck from a markdown file through the API (uploading its two images as assets),
then exports it RUNS times to PDF and to PNG, one job at a time, and reports per format:
- wall: from the POST of exports/create until a poll sees `succeeded` (polling every 10 ms),
- render: the job's finished_at - started_at (the worker's own time),
- pickup: started_at - created_at (queue latency),
as medians, plus ms per slide. Prints `key value` lines.

Usage: slides.py BASE_URL API_KEY DECK.md RUNS
"""
import datetime
import hashlib
import json
import statistics
import sys
import time
import urllib.request

BASE, KEY, DECK, RUNS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
IMAGES = {
    "11111111-1111-4111-8111-111111111111": ("fixtures/decks/chart.png", "image/png"),
    "22222222-2222-4222-8222-222222222222": ("fixtures/decks/photo.jpg", "image/jpeg"),
}


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(BASE + path, data=data, method=method)
    req.add_header("x-api-key", KEY)
    if data is not None:
        req.add_header("content-type", "application/json")
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def ts(s):
    return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))


def wait(path, done, step=0.01):
    while True:
        v = call("GET", path)
        if done(v):
            return v
        time.sleep(step)


deck = call("POST", "/api/slides/create", {"markdown": "# placeholder"})
deck_id = deck["id"]
markdown = open(DECK).read()
for placeholder, (path, mime) in IMAGES.items():
    data = open(path, "rb").read()
    a = call("POST", "/api/slides/assets/create", {
        "deck_id": deck_id, "file": path.rsplit("/", 1)[1], "type": mime,
        "size": len(data), "sha256": hashlib.sha256(data).hexdigest()})
    put = urllib.request.Request(a["upload_url"], data=data, method="PUT")
    put.add_header("content-type", mime)
    urllib.request.urlopen(put).read()
    call("POST", "/api/slides/assets/complete", {"deck_id": deck_id, "asset_id": a["id"]})
    ready = wait(f"/api/slides/assets/{a['id']}?deck_id={deck_id}",
                 lambda v: v["status"] in ("ready", "rejected"))
    assert ready["status"] == "ready", ready
    markdown = markdown.replace(placeholder, a["id"])
deck = call("POST", "/api/slides/update",
            {"id": deck_id, "expected_version": deck["version"], "markdown": markdown})
slides = len([s for s in deck["content"]["slides"] if not s.get("hidden")])
print(f"slides {slides}")

for fmt in ("pdf", "png"):
    walls, renders, pickups = [], [], []
    for i in range(RUNS + 1):  # the first run warms caches (fonts, images) and is dropped
        t0 = time.perf_counter()
        job = call("POST", "/api/slides/exports/create", {"deck_id": deck_id, "format": fmt})
        done = wait(f"/api/slides/jobs/{job['id']}?deck_id={deck_id}",
                    lambda v: v["status"] in ("succeeded", "failed", "cancelled"))
        wall = (time.perf_counter() - t0) * 1000
        assert done["status"] == "succeeded", done
        if i == 0:
            if fmt == "pdf":
                pdf = urllib.request.urlopen(done["artifacts"][0]["url"]).read()
                open(sys.argv[5] if len(sys.argv) > 5 else "/dev/null", "wb").write(pdf)
                print(f"pdf_bytes {len(pdf)}")
            else:
                print(f"png_files {len(done['artifacts'])}")
                print(f"png_bytes {sum(a['size'] for a in done['artifacts'])}")
            continue
        walls.append(wall)
        renders.append((ts(done["finished_at"]) - ts(done["started_at"])).total_seconds() * 1000)
        pickups.append((ts(done["started_at"]) - ts(done["created_at"])).total_seconds() * 1000)
    print(f"plinth_{fmt}_wall_ms_median {statistics.median(walls):.0f}")
    print(f"plinth_{fmt}_render_ms_median {statistics.median(renders):.0f}")
    print(f"plinth_{fmt}_render_ms_per_slide {statistics.median(renders) / slides:.1f}")
    print(f"plinth_{fmt}_pickup_ms_median {statistics.median(pickups):.0f}")
    print(f"plinth_{fmt}_pickup_ms_max {max(pickups):.0f}")
    print(f"plinth_{fmt}_wall_ms_runs {' '.join(f'{w:.0f}' for w in walls)}")
