#!/usr/bin/env bash
# What notification_keys_prefix (migration 20261213000059) adds to a keyed
# create in PostgreSQL: the key rows' insert (a create's statement writes
# one per keyed notification) timed without and with the index, alternated.
# BENCHMARKS.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/services.sh
services_start durable
psql_() { PGOPTIONS='-c client_min_messages=warning' psql "$DATABASE_URL" -qAt -v ON_ERROR_STOP=1 "$@"; }
psql_ -c "CREATE TABLE k (key text NOT NULL, endpoint_id uuid NOT NULL, id uuid NOT NULL, PRIMARY KEY (key, endpoint_id)); CREATE INDEX k_id ON k (id);"
for round in 1 2 3 4 5 6; do
  for with in no yes; do
    psql_ -c "TRUNCATE k"
    if [ "$with" = yes ]; then psql_ -c "CREATE INDEX IF NOT EXISTS k_prefix ON k (key COLLATE \"C\")"; else psql_ -c "DROP INDEX IF EXISTS k_prefix"; fi
    # 200 statements of 1,000 keyed rows, as group commits write them.
    start=$(date +%s%N)
    for b in $(seq 1 200); do
      echo "INSERT INTO k SELECT 'order-' || ($b * 1000 + g) || ':paid', '01939d4e-0000-7000-8000-000000000001', gen_random_uuid() FROM generate_series(1, 1000) g;"
    done | psql_ >/dev/null
    end=$(date +%s%N)
    echo "round $round prefix-index=$with: $(( (end - start) / 1000000 )) ms for 200,000 keyed rows"
  done
done
