-- wrk script: the baseline's POST /echo with a body the size of a KV get's: bare axum
-- reading and parsing a small JSON body (the like-for-like baseline of POST endpoints).
wrk.method = "POST"
wrk.path = "/echo"
wrk.body = '{"namespace":"bench","key":"k500"}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["x-api-key"] = "0123456789abcdef0123456789abcdef0123456789abcdef"
