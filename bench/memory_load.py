"""The load of bench/memory.sh: 10,000 mixed requests from 16 threads (viewer reads, key-value
writes and reads, post creates and lists, credit balances, unknown routes) and 100 slide
exports (PDF, PNG, HTML in turn, four at a time), each awaited."""
import json, sys, threading, urllib.request, urllib.error

BASE, KEY = sys.argv[1], sys.argv[2]


def call(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(BASE + path, data, {"x-api-key": KEY, "content-type": "application/json"}, method=method)
    try:
        with urllib.request.urlopen(req, timeout=120) as r:
            return r.status, json.loads(r.read() or b"{}")
    except urllib.error.HTTPError as e:
        return e.code, {}


MIX = [
    lambda i: call("GET", "/api/users/viewer"),
    lambda i: call("POST", "/api/kv/entries/update", {"namespace": "bench", "key": f"k{i % 500}", "value": "x" * 200}),
    lambda i: call("POST", "/api/kv/entries/get", {"namespace": "bench", "key": f"k{i % 500}"}),
    lambda i: call("POST", "/api/posts/create", {"type": "GENERAL", "fields": {"title": f"post {i}"}, "markdown": f"# Post {i}\n\nSome *text* and a [link](https://example.com/{i})."}),
    lambda i: call("POST", "/api/posts", {"limit": 20}),
    lambda i: call("GET", "/api/credits/balance"),
    lambda i: call("GET", f"/api/nothing-here/{i}"),
]
failures = []
call("POST", "/api/kv/namespaces/create", {"namespace": "bench"})


def requests(start, n):
    for i in range(start, start + n):
        status, _ = MIX[i % len(MIX)](i)
        if status >= 500:
            failures.append(status)


threads = [threading.Thread(target=requests, args=(t * 625, 625)) for t in range(16)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"10,000 requests: {len(failures)} answered 5xx")

deck_md = "\n---\n\n".join(
    f"# Slide {n}\n\n- point one\n- point two with `code`\n\n```rust\nfn main() {{ println!(\"{n}\"); }}\n```\n" for n in range(1, 11)
)
status, deck = call("POST", "/api/slides/create", {"markdown": deck_md})
assert status == 200, deck
done = {"succeeded": 0, "other": 0}


def exports(k):
    for j in range(25):
        fmt = ["pdf", "png", "html"][(k + j) % 3]
        status, job = call("POST", "/api/slides/exports/create", {"deck_id": deck["id"], "format": fmt})
        if status != 200:
            done["other"] += 1
            continue
        while True:
            status, v = call("GET", f"/api/slides/jobs/{job['id']}?deck_id={deck['id']}&wait=30")
            if v.get("status") in ("succeeded", "failed", "cancelled"):
                done["succeeded" if v["status"] == "succeeded" else "other"] += 1
                break


threads = [threading.Thread(target=exports, args=(k,)) for k in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(f"100 exports: {done['succeeded']} succeeded, {done['other']} not")
