-- wrk script: POST /api/kv/entries/get of one of 1,000 keys, as the owning admin ($KEY).
local key = os.getenv("KEY")
math.randomseed(os.time())
request = function()
  return wrk.format("POST", "/api/kv/entries/get",
    { ["Content-Type"] = "application/json", ["x-api-key"] = key },
    '{"namespace":"bench","key":"k' .. math.random(1000) .. '"}')
end
