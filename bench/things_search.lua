-- wrk script: GET /api/data/things/list/search with one word (or, one time in four, two
-- words) of the seeded vocabulary (bench/seed_things.py writes it to $VOCAB).
local words = {}
for line in io.lines(os.getenv("VOCAB")) do words[#words + 1] = line end
math.randomseed(os.time())
request = function()
  local q = words[math.random(#words)]
  if math.random() < 0.25 then q = q .. "+" .. words[math.random(#words)] end
  return wrk.format("GET", "/api/data/things/list/search?search=" .. q)
end
