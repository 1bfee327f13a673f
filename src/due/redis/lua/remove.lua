-- Removes members from the buckets and from `inflight` (cancelled
-- notifications). ARGV: the members.
drop(ARGV)
zrem(INFLIGHT, ARGV)
save()
return 0
