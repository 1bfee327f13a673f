-- Empties the due side of the index: every bucket the shape knows, the
-- directory and the shape (`inflight` stays). Buckets the shape does not
-- know are left to SCAN (see `clear_due`).
if shape[1] then
  local doomed = {}
  for number = 0, 2 ^ level + split - 1 do
    doomed[#doomed + 1] = key(name(number))
    if #doomed == 500 then
      redis.call('UNLINK', unpack(doomed))
      doomed = {}
    end
  end
  if #doomed > 0 then redis.call('UNLINK', unpack(doomed)) end
end
redis.call('DEL', DIR, SHAPE)
return 0
