-- wrk script: GET /api/downloads/{token} with a random token of $TOKENS_FILE (wrk does
-- not follow the 302). Prints how many answers had each status.
local tokens = {}
for line in io.lines(os.getenv("TOKENS_FILE")) do
  tokens[#tokens + 1] = line
end
local threads = {}
setup = function(thread)
  threads[#threads + 1] = thread
end
init = function()
  statuses = {}
  math.randomseed(os.time() + math.random(1000000))
end
request = function()
  return wrk.format("GET", "/api/downloads/" .. tokens[math.random(#tokens)])
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
