-- wrk script: POST /api/analytics/track of one hit (a page of 50, a client of 1,000,
-- small data) to the site in $SITE; counts statuses.
dofile("bench/tally.lua")
local site = os.getenv("SITE")
local headers = { ["Content-Type"] = "application/json" }
local n = 0
request = function()
  n = n + 1
  return wrk.format("POST", "/api/analytics/track", headers, string.format(
    '{"site_id":"%s","label":"/page/%d?utm=x","client_id":"00000000-0000-4000-8000-%012d",' ..
    '"data":{"ref":"bench"}}', site, n % 50, math.random(1000)))
end
