-- wrk script: POST /api/kv/entries/update of one of 1,000 keys with a 100-byte value.
local key = os.getenv("KEY")
local value = string.rep("v", 100)
math.randomseed(os.time())
request = function()
  return wrk.format("POST", "/api/kv/entries/update",
    { ["Content-Type"] = "application/json", ["x-api-key"] = key },
    '{"namespace":"bench","key":"k' .. math.random(1000) .. '","value":"' .. value .. '"}')
end
