-- Claim. ARGV[1] now (ms), ARGV[2] limit, ARGV[3] lease expiry (ms, with
-- a fraction that tells this claim's leases from others'), ARGV[4] most
-- expired leases to requeue, ARGV[5] claim what is due by (ms), ARGV[6] on
-- the lease expiries of earlier claims whose answer the caller never read.
-- Expired leases, and those of such lost claims, go back to the buckets
-- first; then up to `limit` members due by ARGV[5] move to `inflight` with
-- the lease, taken bucket by bucket in the directory's order. Returns
-- {members, earliest due time left, earliest lease expiry, how many leases
-- expired, how many lost claims' leases came back, the lost claims'
-- expiries that held some}.
local now, limit, lease, due_by = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[5]

-- A lease ends at its millisecond: the fraction a claim's carries only
-- tells it from others' (up to, not including, the next millisecond).
local expired = redis.call('ZRANGEBYSCORE', INFLIGHT, '-inf', '(' .. (tonumber(now) + 1), 'LIMIT', 0, tonumber(ARGV[4]))
-- A lost claim ran (after its caller gave up waiting: the server stalled,
-- or the answer was lost), so nobody delivers what it leased: its leases
-- are found by their exact expiry and return now, not when they expire.
local returned, found = {}, {}
for i = 6, #ARGV do
  local members = redis.call('ZRANGEBYSCORE', INFLIGHT, ARGV[i], ARGV[i])
  if #members > 0 then
    found[#found + 1] = ARGV[i]
    for _, member in ipairs(members) do returned[#returned + 1] = member end
  end
end
local back = {}
for _, list in ipairs({expired, returned}) do
  for _, member in ipairs(list) do back[#back + 1] = member end
end
if #back > 0 then
  zrem(INFLIGHT, back)
  local scored = {}
  for _, member in ipairs(back) do
    scored[#scored + 1] = now
    scored[#scored + 1] = member
  end
  put(scored)
end

local ids = {}
local last_due = tonumber(due_by)
-- At most 32 rounds of 64 buckets per call: entries left early by members
-- moved later cost a visit each, and a claim that runs out of rounds
-- returns what it has (the early entries it settled stay settled).
local rounds = 0
while #ids < limit and rounds < 32 do
  rounds = rounds + 1
  local buckets = redis.call('ZRANGEBYSCORE', DIR, '-inf', due_by, 'LIMIT', 0, 64)
  if #buckets == 0 then break end
  for _, bucket in ipairs(buckets) do
    local want = limit - #ids
    if want <= 0 then break end
    -- The bucket's first want + 1 members by time: those due are taken, and
    -- the first one left is the bucket's time from now on.
    local k = key(bucket)
    local first = redis.call('ZRANGE', k, 0, want, 'WITHSCORES')
    local taken, next_at = 0, nil
    for i = 1, #first, 2 do
      if taken < want and tonumber(first[i + 1]) <= last_due then
        taken = taken + 1
        ids[#ids + 1] = first[i]
      else
        next_at = first[i + 1]
        break
      end
    end
    if taken > 0 then
      redis.call('ZREMRANGEBYRANK', k, 0, taken - 1)
      counted = counted - taken
    elseif #first == 0 then
      -- Listed, yet gone: a bucket was evicted or deleted, and its members
      -- with it. The housekeeper rebuilds the index when the sentinel goes.
      redis.call('ZREM', DIR, SENTINEL)
    end
    if next_at then
      redis.call('ZADD', DIR, next_at, bucket)
      if taken > 0 then
        -- All of it was read unless want + 1 came back.
        local left = nil
        if #first / 2 <= want then left = #first / 2 - taken end
        shrunk(bucket, left)
      end
    else
      shrunk(bucket, 0)
    end
  end
end

if #ids > 0 then
  local scored = {}
  for _, member in ipairs(ids) do
    scored[#scored + 1] = lease
    scored[#scored + 1] = member
  end
  zadd(INFLIGHT, scored)
end
save()

-- The earliest due time (the sentinel at +inf is not one); it may be early
-- (see the directory), which costs a claim that finds nothing.
local first = redis.call('ZRANGEBYSCORE', DIR, '-inf', '(+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local first_lease = redis.call('ZRANGE', INFLIGHT, 0, 0, 'WITHSCORES')
return {ids, first[2] or false, first_lease[2] or false, #expired, #returned, found}
