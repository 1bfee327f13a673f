-- Empties the due side of the index: every bucket the ranges know, the
-- directory, the ranges and the count (`inflight` stays). Buckets the
-- ranges do not know are left to SCAN (see `clear_due`).
local starts = redis.call('ZRANGE', RANGES, 0, -1)
local doomed = {}
for _, start in ipairs(starts) do
  doomed[#doomed + 1] = key(start)
  if #doomed == 500 then
    redis.call('UNLINK', unpack(doomed))
    doomed = {}
  end
end
if #doomed > 0 then redis.call('UNLINK', unpack(doomed)) end
redis.call('DEL', DIR, RANGES, COUNT)
return #starts
