-- Before a rebuild adds ARGV[1] members: splits the (empty) buckets now,
-- which moves nothing, rather than one by one as they fill, which would
-- move half of them; and keeps that many buckets (`floor`) until the
-- rebuild marks the index complete, so that merges do not undo it.
grow(tonumber(ARGV[1]))
floor = math.max(floor, 2 ^ level + split)
resize()
redis.call('HSET', SHAPE, 'floor', name(floor))
return floor
