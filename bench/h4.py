"""Two hostile clients for bench/h4.sh: each creates a deck and sends slide-operation
batches in a loop until killed, then (on SIGTERM) writes per-kind timings."""
import json, signal, sys, threading, time, urllib.request, urllib.error

base, key, out = sys.argv[1], sys.argv[2], sys.argv[3]
times = {"26000 inserts (413)": [], "500 inserts (400)": []}
stop = threading.Event()
statuses = {}

def call(path, body):
    # Compact JSON: 26,000 inserts are then about 960 KB, under the 1 MiB body limit.
    data = body if isinstance(body, bytes) else json.dumps(body, separators=(",", ":")).encode()
    req = urllib.request.Request(base + path, data,
                                 {"content-type": "application/json", "x-api-key": key})
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)
    except OSError as e:  # a refused upload may close the connection mid-send
        return 0, {"error": str(e)}

def hostile():
    _, deck = call("/api/slides/create", {"markdown": "# target"})
    insert = {"op": "insert", "index": 0, "slide": {}}
    batches = [("26000 inserts (413)", [insert] * 26000), ("500 inserts (400)", [insert] * 500)]
    # Encoded once, so the clients spend their CPU sending, not serialising.
    bodies = [(k, json.dumps({"id": deck["id"], "expected_version": 1, "operations": ops},
                             separators=(",", ":")).encode()) for k, ops in batches]
    while not stop.is_set():
        for kind, body in bodies:
            t = time.perf_counter()
            status, _ = call("/api/slides/update", body)
            times[kind].append(time.perf_counter() - t)
            statuses.setdefault(kind, set()).add(status)

def report(*_):
    stop.set()
    with open(out, "w") as f:
        for kind, ts in times.items():
            if ts:
                ts.sort()
                f.write(f"hostile {kind}: {len(ts)} requests (status {sorted(statuses[kind])}), "
                        f"median {ts[len(ts)//2]*1000:.1f} ms, max {ts[-1]*1000:.1f} ms\n")
    sys.exit(0)

signal.signal(signal.SIGTERM, report)
for _ in range(2):
    threading.Thread(target=hostile, daemon=True).start()
while True:
    time.sleep(1)
