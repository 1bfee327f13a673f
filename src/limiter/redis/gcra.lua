-- The rate limiter's one call per claimed batch: domain::rate::decide
-- and, with lanes, domain::rate::decide_lanes, transcribed line by line
-- (keep them in step; tests/it/rate_limit.rs checks that both decide
-- alike). Times are integer microseconds, which Lua's numbers hold
-- exactly; string.format('%d') writes them whole (tostring would round
-- them to 14 digits).
--
-- KEYS[1]  the base of the limiter's keys: `P:{P}:rate`
--          `<base>:<endpoint>`       hash: tat, epoch, tag (the bucket)
--          `<base>:<endpoint>:fresh`, `<base>:<endpoint>:backlog`: the
--          same, one per lane, when lanes are on
--          `<base>:r:<notification>` "<at>:<epoch>" (a reservation, in
--          its own lane's bucket)
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
  local buckets, tags, intervals, tolerances, tats, epochs = {}, {}, {}, {}, {}, {}
  for l = 1, k do
    tags[l] = ARGV[i]
    intervals[l], tolerances[l] = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    i = i + 3
    buckets[l] = base .. ':' .. endpoint
    if k == 2 then
      buckets[l] = buckets[l] .. lane_names[l]
    end
    local kept = redis.call('HMGET', buckets[l], 'tat', 'epoch', 'tag')
    local tat, epoch = tonumber(kept[1]), tonumber(kept[2])
    if kept[3] ~= tags[l] or not tat or not epoch then
      tat = now
      epoch = now
    end
    tats[l], epochs[l] = tat, epoch
  end
  local sent = 0
  for _ = 1, n do
    local key = base .. ':r:' .. ARGV[i]
    local own = tonumber(ARGV[i + 1])
    i = i + 2
    local other = 3 - own
    local interval, tolerance, epoch = intervals[own], tolerances[own], epochs[own]
    local held = redis.call('GET', key)
    local at = nil
    if held then
      local sep = string.find(held, ':', 1, true)
      if sep and tonumber(string.sub(held, sep + 1)) == epoch then
        at = tonumber(string.sub(held, 1, sep - 1))
        -- Void once older than tolerance + interval + STALE_AFTER_US
        -- (1 s, domain::rate): it takes a new slot.
        if at < now - tolerance - interval - 1000000 then
          at = nil
        end
      end
    end
    if at then
      if at <= due_by and sent < room then
        sent = sent + 1
        redis.call('DEL', key)
        out[#out + 1] = 0
        out[#out + 1] = math.max(at, now)
      else
        out[#out + 1] = 2
        out[#out + 1] = at
      end
    else
      local start = math.max(tats[own], now)
      local slot = math.max(now, start - tolerance)
      local lent = false
      -- Lanes: a slot free now in the other lane's bucket, never a later one.
      if k == 2 and slot > now and sent < room then
        local from = math.max(tats[other], now)
        if from - tolerances[other] <= now then
          tats[other] = from + intervals[other]
          lent = true
          sent = sent + 1
          if held then
            redis.call('DEL', key)
          end
          out[#out + 1] = 0
          out[#out + 1] = now
        end
      end
      if not lent then
        tats[own] = start + interval
        if slot <= due_by and sent < room then
          sent = sent + 1
          if held then
            redis.call('DEL', key)
          end
          out[#out + 1] = 0
        else
          redis.call('SET', key, string.format('%d:%d', slot, epoch),
            'PX', ms(math.max(slot - now, 0) + grace))
          out[#out + 1] = 1
        end
        out[#out + 1] = slot
      end
    end
  end
  for l = 1, k do
    redis.call('HSET', buckets[l], 'tat', string.format('%d', tats[l]),
      'epoch', string.format('%d', epochs[l]), 'tag', tags[l])
    redis.call('PEXPIRE', buckets[l], ms(math.max(tats[l] - now, 0) + grace))
  end
end
return out
