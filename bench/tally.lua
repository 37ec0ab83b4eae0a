-- Shared by the wrk scripts (loaded with dofile from the repository root): counts the
-- answers of every thread by `tally_by(status, body)` (the status unless the script
-- says otherwise) and prints `<tally_title> a: n, b: m` when the run ends.
local threads = {}
tally_by = tally_by or function(status) return status end
tally_title = tally_title or "statuses"
setup = function(thread)
  threads[#threads + 1] = thread
end
init = function()
  tally = {}
  math.randomseed(os.time() + math.random(1000000))
end
response = function(status, headers, body)
  local k = tally_by(status, body)
  tally[k] = (tally[k] or 0) + 1
end
done = function()
  local all = {}
  for _, t in ipairs(threads) do
    for k, n in pairs(t:get("tally")) do
      all[k] = (all[k] or 0) + n
    end
  end
  local parts = {}
  for k, n in pairs(all) do
    parts[#parts + 1] = k .. ": " .. n
  end
  table.sort(parts)
  io.write(tally_title .. " " .. table.concat(parts, ", ") .. "\n")
end
