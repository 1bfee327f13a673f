-- The due time of ARGV[1] in its bucket, or nil.
return redis.call('ZSCORE', key(range_of(ARGV[1])), ARGV[1])
