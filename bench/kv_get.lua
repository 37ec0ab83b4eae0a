-- wrk script: POST /api/kv/entries/get of one of 1,000 keys, as the owning admin ($KEY).
-- The 1,000 requests are formatted once per thread: wrk shares the server's two cores,
-- so building each request in Lua would be load-generator time counted against plinth.
local key = os.getenv("KEY")
local reqs = {}
init = function()
  math.randomseed(os.time() + math.random(1000000))
  for i = 1, 1000 do
    reqs[i] = wrk.format("POST", "/api/kv/entries/get",
      { ["Content-Type"] = "application/json", ["x-api-key"] = key },
      '{"namespace":"bench","key":"k' .. i .. '"}')
  end
end
request = function()
  return reqs[math.random(1000)]
end
