-- wrk script: POST /api/licenses/validate with a random key of $KEYS_FILE and one of
-- two machines per key (the first calls activate them; later calls find them known).
local keys = {}
for line in io.lines(os.getenv("KEYS_FILE")) do
  keys[#keys + 1] = line
end
local threads = {}
setup = function(thread)
  threads[#threads + 1] = thread
end
init = function()
  codes = {}
  math.randomseed(os.time() + math.random(1000000))
end
request = function()
  local k = keys[math.random(#keys)]
  return wrk.format("POST", "/api/licenses/validate", { ["Content-Type"] = "application/json" },
    '{"key":"' .. k .. '","machine":"machine-' .. math.random(2) .. '"}')
end
response = function(status, headers, body)
  local code = body:match('"code":"([a-z_]+)"') or ("status " .. status)
  codes[code] = (codes[code] or 0) + 1
end
done = function()
  local all = {}
  for _, t in ipairs(threads) do
    for c, n in pairs(t:get("codes")) do
      all[c] = (all[c] or 0) + n
    end
  end
  local parts = {}
  for c, n in pairs(all) do
    parts[#parts + 1] = c .. ": " .. n
  end
  table.sort(parts)
  io.write("codes " .. table.concat(parts, ", ") .. "\n")
end
