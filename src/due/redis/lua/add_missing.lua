-- ARGV[1] '0' only to look, '1' to add, '2' to add and also to move earlier
-- a member due later than its score; then score1, member1, score2, ...
-- Per chunk: one ZMSCORE on `inflight`; then for '1' one ZADD NX per
-- bucket, and for '0' and '2' one ZMSCORE per bucket and the writes.
-- ZMSCORE needs Redis 6.2; before it, one ZSCORE per member.
-- Returns {how many were written, the members written ('0': that would be;
-- '1': not listed)}.
local function scores(k, members)
  local found = redis.pcall('ZMSCORE', k, unpack(members))
  if type(found) == 'table' and found.err then
    found = {}
    for i = 1, #members do found[i] = redis.call('ZSCORE', k, members[i]) end
  end
  return found
end
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
    local by_bucket, order = {}, {}
    for k, member in ipairs(members) do
      if not leased[k] then
        local bucket = bucket_of(member)
        if not by_bucket[bucket] then
          by_bucket[bucket] = {}
          order[#order + 1] = bucket
        end
        table.insert(by_bucket[bucket], k)
      end
    end
    for _, bucket in ipairs(order) do
      local ks = by_bucket[bucket]
      local group = {}
      for _, k in ipairs(ks) do group[#group + 1] = members[k] end
      for n, queued in ipairs(scores(key(bucket), group)) do
        local k = ks[n]
        local at = ARGV[i + 2 * (k - 1)]
        if not queued or (mode == '2' and tonumber(queued) > tonumber(at)) then
          writes[#writes + 1] = at
          writes[#writes + 1] = members[k]
          written[#written + 1] = members[k]
        end
      end
    end
    total = total + #writes / 2
    if mode == '2' and #writes > 0 then put(writes) end
  end
end
if mode ~= '0' then resize() end
return {total, written}
