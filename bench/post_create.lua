-- wrk script: POST /api/posts/create with a small markdown body (parsed into editor nodes).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"type":"GENERAL","fields":{"title":"Bench post","description":"load"},"markdown":"# Bench\\n\\nSome **bold** text and a [link](https://example.com).\\n\\n- one\\n- two\\n"}'
