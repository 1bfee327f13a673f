-- A notification a closing circuit released (design §17): it goes out on
-- its endpoint's backlog lane, like a retry, although it was never
-- attempted. The breaker holds a notification without writing it (in the
-- due index and in memory), so `attempts = 0` alone said fresh, and a
-- receiver back from an outage got its fresh notifications behind every
-- one its circuit had held. The release marks the never-attempted ones it
-- moves, once per close (`dispatcher::breaker`). A constant default: no
-- rewrite of the table or its partitions.
ALTER TABLE notifications ADD COLUMN released_by_circuit boolean NOT NULL DEFAULT false;
