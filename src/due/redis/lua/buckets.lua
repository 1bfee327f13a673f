-- The due set, kept as many small sorted sets ("buckets") rather than one:
-- Redis stores a sorted set of up to 128 members as a listpack, ~26 bytes
-- per member here, where one big sorted set costs ~110 (a skiplist node, a
-- dict entry and a string per member, whatever the member's length).
--
-- Each bucket holds the ids of one range. Ids sort by creation time, so a
-- bucket holds notifications created close together, and a claim of a
-- backlog takes runs of neighbouring rows, which PostgreSQL keeps on the
-- same pages (ids spread by a hash made PostgreSQL's work per delivery
-- twice as large: every batch touched a page per row).
--
-- KEYS[1] the directory: a sorted set of bucket -> a time no later than the
--         earliest due time in it (a member moved later leaves it early
--         until a claim settles it), and the never-due sentinel at +inf.
--         Every bucket with members has an entry.
-- KEYS[2] the ranges: a sorted set, every score 0, so ordered by bytes, of
--         the first id of each bucket's range; the first range starts at ''.
-- KEYS[3] inflight: one sorted set of the leases (few at any time).
-- KEYS[4] how many members the buckets hold.
-- A bucket is the key `KEYS[1]:<first id of its range>`. One that would
-- pass FULL members is cut into buckets of about PIECE; one that falls
-- below LOW goes into the bucket before it when that has room.
local DIR, RANGES, INFLIGHT, COUNT = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local SENTINEL = 'hookd:due'
local FULL, PIECE, LOW = 100, 50, 12

-- Members this call added (removed, if negative): INCRBY at the end.
local counted = 0

local function key(start)
  return DIR .. ':' .. start
end

-- Three numbers that order as the bytes of an id (up to 16 bytes) do: a
-- byte counts its value, a missing byte -1, in base 257, in groups of 6, 6
-- and 4 bytes (each within 2^53, exact in Lua's numbers). Lua's `<` on
-- strings would follow the server's collation locale, not bytes.
local function rank(s)
  local b1, b2, b3, b4, b5, b6, b7, b8, b9, b10, b11, b12, b13, b14, b15, b16 = s:byte(1, 16)
  return (((((b1 or -1) * 257 + (b2 or -1)) * 257 + (b3 or -1)) * 257 + (b4 or -1)) * 257
      + (b5 or -1)) * 257 + (b6 or -1),
    (((((b7 or -1) * 257 + (b8 or -1)) * 257 + (b9 or -1)) * 257 + (b10 or -1)) * 257
      + (b11 or -1)) * 257 + (b12 or -1),
    (((b13 or -1) * 257 + (b14 or -1)) * 257 + (b15 or -1)) * 257 + (b16 or -1)
end

local function less(a1, a2, a3, b1, b2, b3)
  if a1 ~= b1 then return a1 < b1 end
  if a2 ~= b2 then return a2 < b2 end
  return a3 < b3
end

-- The ranges were lost (evicted or deleted): the buckets can no longer be
-- found by id. Taking the sentinel away makes the housekeeper rebuild the
-- index (see `rebuild.rs`); meanwhile one range holds everything.
local function ranges_lost()
  if redis.call('EXISTS', DIR) == 1 then
    redis.call('ZREM', DIR, SENTINEL)
  end
  redis.call('ZADD', RANGES, 0, '')
end

-- The start of the range `member` falls in: the greatest start not after it.
local function range_of(member)
  local found = redis.call('ZREVRANGEBYLEX', RANGES, '[' .. member, '-', 'LIMIT', 0, 1)
  if found[1] then return found[1] end
  ranges_lost()
  return ''
end

-- The start of the range after `start`, or false for the last one.
local function range_after(start)
  return redis.call('ZRANGEBYLEX', RANGES, '(' .. start, '+', 'LIMIT', 0, 1)[1] or false
end

-- The start of the range before `start` (not the first range).
local function range_before(start)
  return redis.call('ZREVRANGEBYLEX', RANGES, '(' .. start, '-', 'LIMIT', 0, 1)[1]
end

-- Groups a flat list (`stride` 1: members; 2: score, member pairs) by range:
-- returns the starts in order of first use, per start its part of the list,
-- and per start the rank of its first member if its members came in
-- ascending id order (else false). Neighbouring ids share a range, so a
-- sorted list costs one lookup per range, not per member.
local function by_range(list, stride)
  local groups, order, ascending, latest = {}, {}, {}, {}
  local start, low, high, upper
  for i = 1, #list, stride do
    local member = list[i + stride - 1]
    local r1, r2, r3 = rank(member)
    local inside = start and not less(r1, r2, r3, low[1], low[2], low[3])
    if inside then
      if upper == nil then
        upper = range_after(start)
        if upper then high = {rank(upper)} end
      end
      inside = not upper or less(r1, r2, r3, high[1], high[2], high[3])
    end
    if not inside then
      start = range_of(member)
      low = {rank(start)}
      upper = nil
    end
    local group = groups[start]
    local previous = latest[start]
    if not group then
      group = {}
      groups[start] = group
      order[#order + 1] = start
      ascending[start] = {r1, r2, r3}
    elseif ascending[start] and not less(previous[1], previous[2], previous[3], r1, r2, r3) then
      ascending[start] = false
    end
    latest[start] = {r1, r2, r3}
    for j = i, i + stride - 1 do group[#group + 1] = list[j] end
  end
  return order, groups, ascending
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

-- The scores of `members` in `k`, false for one not there: one ZMSCORE,
-- or one ZSCORE per member before Redis 6.2.
local function scores(k, members)
  local found = redis.pcall('ZMSCORE', k, unpack(members))
  if type(found) == 'table' and found.err then
    found = {}
    for i = 1, #members do found[i] = redis.call('ZSCORE', k, members[i]) end
  end
  return found
end

-- ZREM in chunks; returns the members removed.
local function zrem(k, members)
  local removed = 0
  for i = 1, #members, 500 do
    removed = removed + redis.call('ZREM', k, unpack(members, i, math.min(i + 499, #members)))
  end
  return removed
end

-- The earliest score of flat {score, member, ...}.
local function earliest(scored)
  local low = tonumber(scored[1])
  for i = 3, #scored, 2 do
    local at = tonumber(scored[i])
    if at < low then low = at end
  end
  return low
end

-- The directory's time for `start`: lowered to `at` if that is earlier
-- (ZADD LT needs Redis 6.2; before it, a ZSCORE first).
local function lower(start, at)
  local reply = redis.pcall('ZADD', DIR, 'LT', at, start)
  if type(reply) == 'table' and reply.err then
    local current = redis.call('ZSCORE', DIR, start)
    if not current or tonumber(current) > tonumber(at) then
      redis.call('ZADD', DIR, at, start)
    end
  end
end

-- Cuts the bucket at `start`, with `scored` to add (flag NX: keeping the
-- scores of members already there), into buckets of about PIECE members,
-- in id order; returns how many members were new. `first`: the rank of the
-- first of `scored` if they come in ascending id order (else false): when
-- they also all come after what the bucket holds (a rebuild, or ids just
-- made, filling the last range), they are appended as they are.
local function cut(start, scored, flag, first)
  local k = key(start)
  local held = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
  local at, ranks, all = {}, {}, {}
  local function before(a, b)
    local x, y = ranks[a], ranks[b]
    return less(x[1], x[2], x[3], y[1], y[2], y[3])
  end
  for i = 1, #held, 2 do
    at[held[i]] = held[i + 1]
    ranks[held[i]] = {rank(held[i])}
    all[#all + 1] = held[i]
  end
  table.sort(all, before)
  local before_count = #all
  local last = ranks[all[#all]]
  if first and (not last or less(last[1], last[2], last[3], first[1], first[2], first[3])) then
    for i = 1, #scored, 2 do
      at[scored[i + 1]] = scored[i]
      all[#all + 1] = scored[i + 1]
    end
  else
    local in_order = true
    for i = 1, #scored, 2 do
      local member = scored[i + 1]
      if not at[member] then
        ranks[member] = {rank(member)}
        if #all > 0 and before(member, all[#all]) then in_order = false end
        all[#all + 1] = member
      end
      if not at[member] or flag ~= 'NX' then at[member] = scored[i] end
    end
    if not in_order then table.sort(all, before) end
  end
  local pieces = math.ceil(#all / PIECE)
  local size = math.ceil(#all / pieces)
  redis.call('DEL', k)
  for p = 0, pieces - 1 do
    local piece = {}
    for i = p * size + 1, math.min((p + 1) * size, #all) do
      piece[#piece + 1] = at[all[i]]
      piece[#piece + 1] = all[i]
    end
    -- The first piece keeps the range's start; each other starts at its
    -- first id.
    local piece_start = start
    if p > 0 then
      piece_start = all[p * size + 1]
      redis.call('ZADD', RANGES, 0, piece_start)
    end
    zadd(key(piece_start), piece)
    redis.call('ZADD', DIR, earliest(piece), piece_start)
  end
  return #all - before_count
end

-- Adds (or moves) flat {score, member, ...} to their buckets, with a ZADD
-- `flag` if given (NX: only those not there); returns how many were new.
local function put(scored, flag)
  local order, groups, ascending = by_range(scored, 2)
  local added = 0
  for _, start in ipairs(order) do
    local group = groups[start]
    local k = key(start)
    if redis.call('ZCARD', k) + #group / 2 > FULL then
      added = added + cut(start, group, flag, ascending[start])
    else
      added = added + zadd(k, group, flag)
      -- NX may have added nothing: the entry is then early, which a claim
      -- settles.
      lower(start, earliest(group))
    end
  end
  counted = counted + added
  return added
end

-- After members left the bucket at `start`, `left` remain (nil: unknown):
-- an empty bucket gives up its range, and a small one goes into the bucket
-- before it when that has room. The directory's entry may stay early.
local function shrunk(start, left)
  local k = key(start)
  left = left or redis.call('ZCARD', k)
  if left == 0 then
    redis.call('ZREM', DIR, start)
    if start ~= '' then redis.call('ZREM', RANGES, start) end
    return
  end
  if left >= LOW or start == '' then return end
  local previous = range_before(start)
  if not previous or redis.call('ZCARD', key(previous)) + left > PIECE then return end
  local held = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
  local scored = {}
  for i = 1, #held, 2 do
    scored[#scored + 1] = held[i + 1]
    scored[#scored + 1] = held[i]
  end
  zadd(key(previous), scored)
  lower(previous, earliest(scored))
  redis.call('DEL', k)
  redis.call('ZREM', DIR, start)
  redis.call('ZREM', RANGES, start)
end

-- Removes members from their buckets; returns how many were there.
local function drop(members)
  local order, groups = by_range(members, 1)
  local removed = 0
  for _, start in ipairs(order) do
    local gone = zrem(key(start), groups[start])
    if gone > 0 then
      removed = removed + gone
      shrunk(start)
    end
  end
  counted = counted - removed
  return removed
end

-- Moves the count by what this call added and removed.
local function save()
  if counted ~= 0 then
    redis.call('INCRBY', COUNT, string.format('%d', counted))
  end
end
