-- wrk script: POST /api/licenses/validate with a random key of $KEYS_FILE and one of
-- two machines per key (the first calls activate them; later calls find them known).
local keys = {}
for line in io.lines(os.getenv("KEYS_FILE")) do
  keys[#keys + 1] = line
end
request = function()
  local k = keys[math.random(#keys)]
  return wrk.format("POST", "/api/licenses/validate", { ["Content-Type"] = "application/json" },
    '{"key":"' .. k .. '","machine":"machine-' .. math.random(2) .. '"}')
end
tally_title = "codes"
tally_by = function(status, body)
  return body:match('"code":"([a-z_]+)"') or ("status " .. status)
end
dofile("bench/tally.lua")
