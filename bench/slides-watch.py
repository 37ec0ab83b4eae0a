#!/usr/bin/env python3
"""Issue 44, Speed: `plinth slides watch` from a save to the page's notice and its new
page. Starts the watch on a copy of the deck (images beside it, bench/slides.md.sh),
listens to /events as the page does, rewrites the deck RUNS times (one word changes
each time), and prints, in ms: write -> `event: render`, and write -> the new page
fetched (GET /, as the page's reload does). A browser's own reload (parse, layout)
comes on top: tests/api/slides_watch.rs measures it in headless Chromium.

Usage: bench/slides-watch.py [DECK.md, default fixtures/decks/bench20-rich.md] [RUNS, default 20]
  PLINTH=path/to/plinth (default target/release/plinth)
"""
import http.client
import os
import statistics
import subprocess
import sys
import tempfile
import time

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
os.chdir(root)
deck_in = sys.argv[1] if len(sys.argv) > 1 else "fixtures/decks/bench20-rich.md"
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
plinth = os.environ.get("PLINTH", "target/release/plinth")
if not os.access(plinth, os.X_OK):
    sys.exit(f"no {plinth}: cargo build --release --bin plinth")

work = tempfile.mkdtemp()
slides = subprocess.run(
    ["bench/slides.md.sh", deck_in, os.path.join(work, "deck")],
    check=True, capture_output=True, text=True,
).stdout.strip()
deck = os.path.join(work, "deck", "deck.md")
text = open(deck).read()

watch = subprocess.Popen(
    [plinth, "slides", "watch", deck, "--listen", "127.0.0.1:0"],
    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
)
try:
    line = watch.stdout.readline()
    url = line.split("plinth slides watch: ", 1)[1].split()[0]
    host, port = url[len("http://"):].rstrip("/").split(":")
    events = http.client.HTTPConnection(host, int(port))
    events.request("GET", "/events")
    stream = events.getresponse()

    def next_render():
        """The tag of the next `event: render`."""
        event = None
        while True:
            raw = stream.fp.readline().decode().rstrip("\n")
            if raw.startswith("event:"):
                event = raw.split(":", 1)[1].strip()
            elif raw.startswith("data:") and event == "render":
                return raw.split(":", 1)[1].strip()

    def page():
        c = http.client.HTTPConnection(host, int(port))
        c.request("GET", "/")
        body = c.getresponse().read()
        c.close()
        return body

    tag = next_render()
    size = len(page())
    notice, fetched = [], []
    for n in range(runs):
        time.sleep(0.2)
        word = f"Edited{n}"
        t0 = time.perf_counter()
        with open(deck, "w") as f:
            f.write(text + f"\n\n{word}\n")
        new = next_render()
        t1 = time.perf_counter()
        body = page()
        t2 = time.perf_counter()
        assert new != tag and word.encode() in body, (new, tag)
        tag = new
        notice.append((t1 - t0) * 1e3)
        fetched.append((t2 - t0) * 1e3)
finally:
    watch.terminate()
    watch.wait()

print(f"machine: {os.cpu_count()} cores, {os.uname().machine}, load {os.getloadavg()[0]:.1f}")
print(f"deck: {deck_in} ({slides} slides, page {size} bytes); saves: {runs}")
for name, values in (("write_to_event_ms", notice), ("write_to_page_fetched_ms", fetched)):
    print(
        f"{name} median {statistics.median(values):.1f} best {min(values):.1f} "
        f"worst {max(values):.1f}"
    )
