-- ARGV[1] '0' only to look, '1' to add, '2' to add and also to move earlier
-- a member due later than its score; then score1, member1, score2, ...
-- Per chunk: one ZMSCORE on `inflight`; then for '1' one ZADD NX per
-- bucket, and for '0' and '2' one ZMSCORE per bucket and the writes.
-- Sorted by id, the entries cost one range lookup per bucket.
-- (`scores`: ZMSCORE, or one ZSCORE per member before Redis 6.2.)
-- Returns {how many were written, the members written ('0': that would be;
-- '1': not listed)}.
local mode = ARGV[1]
local total, written = 0, {}
for i = 2, #ARGV, 1000 do
  local last = math.min(i + 999, #ARGV)
  local members = {}
  for j = i + 1, last, 2 do members[#members + 1] = ARGV[j] end
  local leased = scores(INFLIGHT, members)
  local writes = {}
  if mode == '1' then
    for k, member in ipairs(members) do
      if not leased[k] then
        writes[#writes + 1] = ARGV[i + 2 * (k - 1)]
        writes[#writes + 1] = member
      end
    end
    if #writes > 0 then total = total + put(writes, 'NX') end
  else
    local unleased = {}
    for k, member in ipairs(members) do
      if not leased[k] then unleased[#unleased + 1] = k end
    end
    local listed = {}
    for _, k in ipairs(unleased) do listed[#listed + 1] = members[k] end
    local order, groups = by_range(listed, 1)
    local queued = {}
    for _, start in ipairs(order) do
      local group = groups[start]
      for n, score in ipairs(scores(key(start), group)) do
        if score then queued[group[n]] = tonumber(score) end
      end
    end
    for _, k in ipairs(unleased) do
      local member = members[k]
      local at = ARGV[i + 2 * (k - 1)]
      local due = queued[member]
      if not due or (mode == '2' and due > tonumber(at)) then
        writes[#writes + 1] = at
        writes[#writes + 1] = member
        written[#written + 1] = member
      end
    end
    total = total + #writes / 2
    if mode == '2' and #writes > 0 then put(writes) end
  end
end
save()
return {total, written}
