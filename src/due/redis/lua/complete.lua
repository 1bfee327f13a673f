-- Ends leases and schedules what comes next. ARGV[1] how many members
-- leave `inflight`, then those members, then score, member pairs to add
-- (or move) to the buckets. Also serves plain adds (none leaving).
local done = tonumber(ARGV[1])
if done > 0 then
  local members = {}
  for i = 2, done + 1 do members[#members + 1] = ARGV[i] end
  zrem(INFLIGHT, members)
end
if #ARGV > done + 1 then
  local scored = {}
  for i = done + 2, #ARGV do scored[#scored + 1] = ARGV[i] end
  put(scored)
  save()
end
return 0
