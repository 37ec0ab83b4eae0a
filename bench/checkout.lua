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
request = function()
  local k = keys[math.random(#keys)]
  local sku = hot or ("SKU-" .. math.random(items))
  return wrk.format("POST", "/api/marketplace/checkout",
    { ["Content-Type"] = "application/json", ["x-api-key"] = k },
    '{"items":[{"sku":"' .. sku .. '","quantity":1}],"payment_type":"tokens","domain":"' .. domain .. '"}')
end
dofile("bench/tally.lua")
