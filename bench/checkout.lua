-- wrk script: POST /api/marketplace/checkout, one unit of a token-priced item, paid in
-- tokens. A random buyer key from $KEYS_FILE; a random sku of SKU-1..SKU-$ITEMS (or the
-- one $SKU) of the organization $DOMAIN. Prints how many answers had each status.
local keys = {}
for line in io.lines(os.getenv("KEYS_FILE")) do
  keys[#keys + 1] = line
end
local items = tonumber(os.getenv("ITEMS") or "1")
local hot = os.getenv("SKU")
local domain = os.getenv("DOMAIN")
local threads = {}
setup = function(thread)
  threads[#threads + 1] = thread
end
init = function()
  statuses = {}
  math.randomseed(os.time() + math.random(1000000))
end
request = function()
  local k = keys[math.random(#keys)]
  local sku = hot or ("SKU-" .. math.random(items))
  return wrk.format("POST", "/api/marketplace/checkout",
    { ["Content-Type"] = "application/json", ["x-api-key"] = k },
    '{"items":[{"sku":"' .. sku .. '","quantity":1}],"payment_type":"tokens","domain":"' .. domain .. '"}')
end
response = function(status)
  statuses[status] = (statuses[status] or 0) + 1
end
done = function()
  local all = {}
  for _, t in ipairs(threads) do
    for s, n in pairs(t:get("statuses")) do
      all[s] = (all[s] or 0) + n
    end
  end
  local parts = {}
  for s, n in pairs(all) do
    parts[#parts + 1] = s .. ": " .. n
  end
  table.sort(parts)
  io.write("statuses " .. table.concat(parts, ", ") .. "\n")
end
