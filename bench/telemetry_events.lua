-- wrk script: POST /api/telemetry/events, batches of 25 events with ids unique across
-- threads and runs, spread over 20 clients, 3 days and the nine names; counts statuses.
dofile("bench/tally.lua")
local names = { "app_opened", "app_became_active", "app_updated", "account_signed_in",
  "subscription_checkout_started", "subscription_checkout_completed", "feature_used",
  "milestone_reached", "error_occurred" }
-- Each wrk thread is its own Lua state: the thread number set in setup keeps ids apart.
local tally_setup, threads_seen = setup, 0
setup = function(thread)
  tally_setup(thread)
  threads_seen = threads_seen + 1
  thread:set("tid", threads_seen)
end
local run
local n = 0
local headers = { ["Content-Type"] = "application/json" }
request = function()
  run = run or (tostring(os.time()) .. "-" .. tostring(tid))
  n = n + 1
  local events = {}
  for i = 1, 25 do
    events[i] = string.format(
      '{"event_id":"%s-%d-%d","event_name":"%s","occurred_at":"2026-11-%02dT12:00:00Z",' ..
      '"data":{"app_version":"1.%d","os":"linux","gpu":true}}',
      run, n, i, names[(n + i) % 9 + 1], 20 + (n + i) % 3, i % 4)
  end
  return wrk.format("POST", "/api/telemetry/events", headers,
    '{"product_id":"bench","client_id":"c' .. (n % 20) .. '","events":[' ..
    table.concat(events, ",") .. ']}')
end
