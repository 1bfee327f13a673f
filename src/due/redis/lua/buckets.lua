-- The due set, kept as many small sorted sets ("buckets") rather than one:
-- Redis stores a sorted set of up to 128 members as a listpack, ~26 bytes
-- per member here, where one big sorted set costs ~110 (a skiplist node, a
-- dict entry and a string per member).
--
-- KEYS[1] the directory: a sorted set of bucket number -> a time no later
--         than the earliest due time in that bucket (a member moved later
--         leaves it early until a claim settles it), and the never-due
--         sentinel at +inf. Every bucket with members has an entry.
-- KEYS[2] the shape: a hash of `level`, `split`, `count` (members in all
--         buckets) and, while a rebuild runs, `floor` (see `presize.lua`).
-- KEYS[3] inflight: one sorted set of the leases (few at any time).
-- A bucket is the key `KEYS[1]:<n>`. Its number comes from linear hashing
-- of the member's last four bytes (random bits of the id): h mod 2^level,
-- or h mod 2^(level+1) where that first number is below `split`; there are
-- 2^level + split buckets. One bucket splits in two when the mean passes
-- PER_BUCKET, and two merge when it falls below a quarter of that, so a
-- bucket stays far below 128 members (the mean of one not yet split is at
-- most twice PER_BUCKET) whatever the number pending.
local DIR, SHAPE, INFLIGHT = KEYS[1], KEYS[2], KEYS[3]
local SENTINEL = 'hookd:due'
local PER_BUCKET = 40
-- Most splits or merges per call: a call adds or removes at most a few
-- thousand members, so this bounds only the unforeseen.
local MAX_RESIZE = 4096

local shape = redis.call('HMGET', SHAPE, 'level', 'split', 'count', 'floor')
local level = tonumber(shape[1]) or 0
local split = tonumber(shape[2]) or 0
local count = tonumber(shape[3]) or 0
-- Fewest buckets that merges leave.
local floor = math.max(tonumber(shape[4]) or 1, 1)
-- A directory without its shape: the shape was evicted or deleted, and the
-- buckets can no longer be found. Taking the sentinel away makes the
-- housekeeper rebuild the index (see `rebuild.rs`).
if not shape[1] and redis.call('EXISTS', DIR) == 1 then
  redis.call('ZREM', DIR, SENTINEL)
end

local function hash(member)
  local n = #member
  if n < 4 then return 0 end
  return ((member:byte(n - 3) * 256 + member:byte(n - 2)) * 256
    + member:byte(n - 1)) * 256 + member:byte(n)
end

local function name(number)
  return string.format('%d', number)
end

local function bucket_of(member)
  local h = hash(member)
  local number = h % 2 ^ level
  if number < split then number = h % 2 ^ (level + 1) end
  return name(number)
end

local function key(bucket)
  return DIR .. ':' .. bucket
end

-- ZADD of flat {score, member, ...}, in chunks, with `flag` (NX, say) if
-- given; returns the members new to `k`.
local function zadd(k, scored, flag)
  local added = 0
  for i = 1, #scored, 1000 do
    local last = math.min(i + 999, #scored)
    if flag then
      added = added + redis.call('ZADD', k, flag, unpack(scored, i, last))
    else
      added = added + redis.call('ZADD', k, unpack(scored, i, last))
    end
  end
  return added
end

-- ZREM in chunks; returns the members removed.
local function zrem(k, members)
  local removed = 0
  for i = 1, #members, 500 do
    removed = removed + redis.call('ZREM', k, unpack(members, i, math.min(i + 499, #members)))
  end
  return removed
end

-- The directory's time for `bucket`: lowered to `at` if that is earlier.
local function lower(bucket, at)
  local current = redis.call('ZSCORE', DIR, bucket)
  if not current or tonumber(current) > tonumber(at) then
    redis.call('ZADD', DIR, at, bucket)
  end
end

-- `lower` for many buckets: one ZADD LT (Redis 6.2 on), or one `lower`
-- each before it.
local function lower_all(order, lows)
  local scored = {}
  for _, bucket in ipairs(order) do
    scored[#scored + 1] = lows[bucket]
    scored[#scored + 1] = bucket
  end
  for i = 1, #scored, 1000 do
    local last = math.min(i + 999, #scored)
    local reply = redis.pcall('ZADD', DIR, 'LT', unpack(scored, i, last))
    if type(reply) == 'table' and reply.err then
      for j = i, last, 2 do lower(scored[j + 1], scored[j]) end
    end
  end
end

-- The directory's time for `bucket`: exactly its earliest member, or no
-- entry once it is empty.
local function settle(bucket)
  local first = redis.call('ZRANGE', key(bucket), 0, 0, 'WITHSCORES')
  if first[2] then
    redis.call('ZADD', DIR, first[2], bucket)
  else
    redis.call('ZREM', DIR, bucket)
  end
end

-- Members of a bucket as flat {score, member, ...}, from ZRANGE's
-- {member, score, ...}.
local function scored_members(bucket)
  local all = redis.call('ZRANGE', key(bucket), 0, -1, 'WITHSCORES')
  local scored = {}
  for i = 1, #all, 2 do
    scored[#scored + 1] = all[i + 1]
    scored[#scored + 1] = all[i]
  end
  return scored
end

-- Splits buckets until the mean for `expected` members is in range.
local function grow(expected)
  local steps = 0
  while expected > PER_BUCKET * (2 ^ level + split) and steps < MAX_RESIZE do
    -- Bucket `split` keeps the members whose next bit is 0 and gives the
    -- others to the new bucket 2^level + split.
    local wide = 2 ^ (level + 1)
    local to_number = split + 2 ^ level
    local from, to = name(split), name(to_number)
    if redis.call('EXISTS', key(from)) == 1 then
      local all = scored_members(from)
      local moving, members = {}, {}
      for i = 1, #all, 2 do
        if hash(all[i + 1]) % wide == to_number then
          moving[#moving + 1] = all[i]
          moving[#moving + 1] = all[i + 1]
          members[#members + 1] = all[i + 1]
        end
      end
      if #members > 0 then
        zadd(key(to), moving)
        zrem(key(from), members)
        settle(from)
        settle(to)
      end
    end
    split = split + 1
    if split == 2 ^ level then
      level = level + 1
      split = 0
    end
    steps = steps + 1
  end
end

-- Adds (or moves) flat {score, member, ...} to their buckets, with a ZADD
-- `flag` if given (NX: only those not there); returns how many were new.
local function put(scored, flag)
  -- Room first: a bucket that once holds more than 128 members stays a
  -- skiplist even when it shrinks again.
  grow(count + #scored / 2)
  local groups, lows, order = {}, {}, {}
  for i = 1, #scored, 2 do
    local bucket = bucket_of(scored[i + 1])
    local group = groups[bucket]
    local at = tonumber(scored[i])
    if not group then
      group = {}
      groups[bucket] = group
      order[#order + 1] = bucket
      lows[bucket] = at
    elseif at < lows[bucket] then
      lows[bucket] = at
    end
    group[#group + 1] = scored[i]
    group[#group + 1] = scored[i + 1]
  end
  local added = 0
  for _, bucket in ipairs(order) do
    added = added + zadd(key(bucket), groups[bucket], flag)
  end
  -- NX may have added nothing to a bucket: its entry is then early, which
  -- a claim settles.
  lower_all(order, lows)
  count = count + added
  return added
end

-- Removes members from their buckets; returns how many were there.
local function drop(members)
  local groups, order = {}, {}
  for _, member in ipairs(members) do
    local bucket = bucket_of(member)
    local group = groups[bucket]
    if not group then
      group = {}
      groups[bucket] = group
      order[#order + 1] = bucket
    end
    group[#group + 1] = member
  end
  local removed = 0
  for _, bucket in ipairs(order) do
    local gone = zrem(key(bucket), groups[bucket])
    if gone > 0 then
      removed = removed + gone
      -- An emptied bucket leaves the directory; one that still has members
      -- keeps a time that may be early, which a claim settles.
      if redis.call('EXISTS', key(bucket)) == 0 then
        redis.call('ZREM', DIR, bucket)
      end
    end
  end
  count = count - removed
  return removed
end

-- Splits or merges buckets until the mean is in range, then saves the shape.
local function resize()
  grow(count)
  local steps = 0
  while 2 ^ level + split > floor and count * 4 < PER_BUCKET * (2 ^ level + split)
      and steps < MAX_RESIZE do
    -- The last bucket goes back into the one it was split from.
    if split == 0 then
      level = level - 1
      split = 2 ^ level
    end
    split = split - 1
    local from, to = name(split + 2 ^ level), name(split)
    local all = scored_members(from)
    if #all > 0 then
      zadd(key(to), all)
      redis.call('DEL', key(from))
      redis.call('ZREM', DIR, from)
      settle(to)
    end
    steps = steps + 1
  end
  redis.call('HSET', SHAPE, 'level', name(level), 'split', name(split), 'count', name(count))
end
