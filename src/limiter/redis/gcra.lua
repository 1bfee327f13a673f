-- The rate limiter's one call per claimed batch: domain::rate::decide,
-- transcribed line by line (keep them in step; tests/it/rate_limit.rs
-- checks that both decide alike). Times are integer microseconds, which
-- Lua's numbers hold exactly; string.format('%d') writes them whole
-- (tostring would round them to 14 digits).
--
-- KEYS[1]  the base of the limiter's keys: `P:{P}:rate`
--          `<base>:<endpoint>`       hash: tat, epoch, tag (the bucket)
--          `<base>:r:<notification>` "<at>:<epoch>" (a reservation)
-- ARGV     now, due_by, grace (µs); then per endpoint: its id, the tag
--          of its limit, interval, tolerance (µs), room (how many may be
--          sent), n, and n notification ids
-- Returns  per notification, in order: kind (0 send, 1 reserve, 2 wait), at
local base = KEYS[1]
local now = tonumber(ARGV[1])
local due_by = tonumber(ARGV[2])
local grace = tonumber(ARGV[3])
local out = {}
local i = 4

local function ms(us)
  return math.floor(us / 1000) + 1
end

while i <= #ARGV do
  local endpoint, tag = ARGV[i], ARGV[i + 1]
  local interval, tolerance = tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  local room, n = tonumber(ARGV[i + 4]), tonumber(ARGV[i + 5])
  i = i + 6
  local sent = 0
  local bucket = base .. ':' .. endpoint
  local kept = redis.call('HMGET', bucket, 'tat', 'epoch', 'tag')
  local tat, epoch = tonumber(kept[1]), tonumber(kept[2])
  if kept[3] ~= tag or not tat or not epoch then
    tat = now
    epoch = now
  end
  for _ = 1, n do
    local key = base .. ':r:' .. ARGV[i]
    i = i + 1
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
      local start = math.max(tat, now)
      local slot = math.max(now, start - tolerance)
      tat = start + interval
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
  redis.call('HSET', bucket, 'tat', string.format('%d', tat),
    'epoch', string.format('%d', epoch), 'tag', tag)
  redis.call('PEXPIRE', bucket, ms(math.max(tat - now, 0) + grace))
end
return out
