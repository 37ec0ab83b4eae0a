-- wrk script: GET /api/downloads/{token} with a random token of $TOKENS_FILE (wrk does
-- not follow the 302). Prints how many answers had each status.
local tokens = {}
for line in io.lines(os.getenv("TOKENS_FILE")) do
  tokens[#tokens + 1] = line
end
request = function()
  return wrk.format("GET", "/api/downloads/" .. tokens[math.random(#tokens)])
end
dofile("bench/tally.lua")
