-- Leases members until a score, keeping a lease that ends later (what
-- `ZADD GT` does from Redis 6.2). ARGV[1] the lease's score, as Redis
-- reads it back; then the members. Returns how many it leased.
local lease = ARGV[1]
local ends = tonumber(lease)
local leased = 0
for i = 2, #ARGV, 1000 do
  local members = {}
  for j = i, math.min(i + 999, #ARGV) do members[#members + 1] = ARGV[j] end
  local held = scores(INFLIGHT, members)
  local scored = {}
  for n, member in ipairs(members) do
    if not held[n] or tonumber(held[n]) < ends then
      scored[#scored + 1] = lease
      scored[#scored + 1] = member
    end
  end
  if #scored > 0 then
    redis.call('ZADD', INFLIGHT, unpack(scored))
    leased = leased + #scored / 2
  end
end
return leased
