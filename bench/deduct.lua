-- wrk script: POST /api/credits/deduct {"credit": 1} with a random key from $KEYS_FILE.
local keys = {}
for line in io.lines(os.getenv("KEYS_FILE")) do
  keys[#keys + 1] = line
end
math.randomseed(os.time())
request = function()
  local k = keys[math.random(#keys)]
  return wrk.format("POST", "/api/credits/deduct",
    { ["Content-Type"] = "application/json", ["x-api-key"] = k }, '{"credit":1}')
end
