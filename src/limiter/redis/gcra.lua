-- The rate limiter's one call per claimed batch: domain::rate::decide
-- and, with lanes, domain::rate::decide_lanes, transcribed line by line
-- (keep them in step; tests/it/rate_limit.rs checks that both decide
-- alike). Times are integer microseconds, which Lua's numbers hold
-- exactly; string.format('%d') writes them whole (tostring would round
-- them to 14 digits).
--
-- KEYS[1]  the base of the limiter's keys: `P:{P}:rate`
--          `<base>:<endpoint>`       hash: tat, epoch, tag, committed,
--                                    lent (the bucket)
--          `<base>:<endpoint>:fresh`, `<base>:<endpoint>:backlog`: the
--          same, one per lane, when lanes are on
--          `<base>:r:<notification>` "<at>:<epoch>" (a reservation in its
--          own lane's bucket) or "<at>:<epoch>:<lent>" (borrowed from the
--          other lane's, under its lent generation)
-- ARGV     now, due_by, grace (µs); then per endpoint: its id, room (how
--          many may be sent), n, k (1: one bucket; 2: lanes, fresh then
--          backlog), k times the tag of the bucket's limit, interval and
--          tolerance (µs), and n times a notification id and its lane
--          (1 fresh, 2 backlog; 1 when k is 1)
-- Returns  per notification, in order: kind (0 send, 1 reserve, 2 wait), at
local base = KEYS[1]
local now = tonumber(ARGV[1])
local due_by = tonumber(ARGV[2])
local grace = tonumber(ARGV[3])
local out = {}
local i = 4
local lane_names = { ':fresh', ':backlog' }

local function ms(us)
  return math.floor(us / 1000) + 1
end

while i <= #ARGV do
  local endpoint = ARGV[i]
  local room, n, k = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  i = i + 4
  -- Per bucket (per lane): its key, limit and kept state.
  local buckets, tags, intervals, tolerances = {}, {}, {}, {}
  local tats, epochs, committeds, lents = {}, {}, {}, {}
  for l = 1, k do
    tags[l] = ARGV[i]
    intervals[l], tolerances[l] = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    i = i + 3
    buckets[l] = base .. ':' .. endpoint
    if k == 2 then
      buckets[l] = buckets[l] .. lane_names[l]
    end
    local kept = redis.call('HMGET', buckets[l], 'tat', 'epoch', 'tag', 'committed', 'lent')
    local tat, epoch = tonumber(kept[1]), tonumber(kept[2])
    if kept[3] ~= tags[l] or not tat or not epoch then
      tats[l], epochs[l], committeds[l], lents[l] = now, now, now, 0
    else
      tats[l], epochs[l] = tat, epoch
      committeds[l] = tonumber(kept[4]) or tat
      lents[l] = tonumber(kept[5]) or 0
    end
  end

  -- Reservation:holds: taken in bucket l's epoch, not taken back if
  -- borrowed, and not older than tolerance + interval + STALE_AFTER_US
  -- (1 s, domain::rate).
  local function holds(at, epoch, lent, l)
    return epoch == epochs[l] and (not lent or lent == lents[l])
      and at >= now - tolerances[l] - intervals[l] - 1000000
  end

  -- The next slot of bucket l.
  local function next_slot(l)
    return math.max(now, math.max(tats[l], now) - tolerances[l])
  end

  -- reclaim: a lane that needs a slot takes back the future it lent.
  local function reclaim(l)
    local committed = math.max(committeds[l], now)
    if tats[l] > committed then
      lents[l] = lents[l] + 1
      tats[l] = committed
    end
  end

  local sent = 0
  for _ = 1, n do
    local key = base .. ':r:' .. ARGV[i]
    local own = tonumber(ARGV[i + 1])
    i = i + 2
    local other = 3 - own
    local held = redis.call('GET', key)
    local at, lent = nil, nil
    if held then
      local h_at, h_epoch, h_lent = string.match(held, '^(%d+):(%d+):?(%d*)$')
      h_at, h_epoch, h_lent = tonumber(h_at), tonumber(h_epoch), tonumber(h_lent)
      local place = own
      if h_lent and k == 2 then
        place = other
      end
      if h_at and holds(h_at, h_epoch, h_lent, place) then
        at, lent = h_at, h_lent
      end
    end
    if at then
      if at <= due_by and sent < room then
        sent = sent + 1
        redis.call('DEL', key)
        if lent and k == 2 then
          -- Sent: the lender may no longer take it back.
          committeds[other] = math.max(committeds[other],
            at + tolerances[other] + intervals[other])
        end
        out[#out + 1] = 0
        out[#out + 1] = math.max(at, now)
      else
        out[#out + 1] = 2
        out[#out + 1] = at
      end
    else
      local place = own
      if k == 2 then
        reclaim(own)
        -- Borrowing: the other lane's slot when it is earlier.
        if next_slot(other) < next_slot(own) then
          place = other
        end
      end
      local slot = next_slot(place)
      tats[place] = math.max(tats[place], now) + intervals[place]
      local send = slot <= due_by and sent < room
      if k == 2 and (send or place == own) then
        committeds[place] = tats[place]
      end
      if send then
        sent = sent + 1
        if held then
          redis.call('DEL', key)
        end
        out[#out + 1] = 0
      else
        local value = string.format('%d:%d', slot, epochs[place])
        if place ~= own then
          value = value .. string.format(':%d', lents[place])
        end
        redis.call('SET', key, value, 'PX', ms(math.max(slot - now, 0) + grace))
        out[#out + 1] = 1
      end
      out[#out + 1] = slot
    end
  end
  for l = 1, k do
    redis.call('HSET', buckets[l], 'tat', string.format('%d', tats[l]),
      'epoch', string.format('%d', epochs[l]), 'tag', tags[l],
      'committed', string.format('%d', committeds[l]),
      'lent', string.format('%d', lents[l]))
    redis.call('PEXPIRE', buckets[l], ms(math.max(tats[l] - now, 0) + grace))
  end
end
return out
