#!/usr/bin/env bash
# The statements GET /v1/stats runs, timed in psql over a day of history
# (10M attempts, 1,000 endpoints): the database side of BENCH_ONLY=stats,
# quick to run without a release build. BENCHMARKS.md has the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib/services.sh
services_start
P="psql $DATABASE_URL -q -v ON_ERROR_STOP=1"
for f in migrations/*.sql; do $P -f $f; done
$P <<'SQL'
INSERT INTO endpoints (id, uid, url, secret, schedule_ms, owner)
SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 'e' || g, 'http://127.0.0.1:9/hook/' || g, 'whsec_x', '{0}', 'owner-' || (g % 100)
FROM generate_series(1, 1000) g;
\timing on
INSERT INTO attempts (notification_id, number, started_at, duration_ms, status_code, outcome)
SELECT ('00000000-0000-7000-8000-' || lpad(to_hex(g), 12, '0'))::uuid, 1, now() - (g % 86400) * interval '1 second', 20, 200, 'succeeded' FROM generate_series(1, 10000000) g;
INSERT INTO minute_stats (endpoint_id, minute, attempts, failed_attempts, delivered, failed, late_0, late_3, late_7, lateness_max_ms)
SELECT e.id, m.minute, CASE WHEN (e.n * 1440 + m.k) % 1000 < 944 THEN 7 ELSE 6 END,
  CASE WHEN e.n <= 20 THEN 2 WHEN (e.n * 7 + m.k) % 20 = 0 THEN 1 ELSE 0 END, 5, 0, 5, 1, 1, 12
FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM endpoints) e
CROSS JOIN (SELECT k, date_trunc('minute', now()) - k * interval '1 minute' AS minute FROM generate_series(0, 1439) k) m;
INSERT INTO minute_totals (minute, shard, attempts, failed_attempts, delivered, failed, late_0, late_3, late_7, lateness_max_ms)
SELECT minute, 0, sum(attempts), sum(failed_attempts), sum(delivered), sum(failed), sum(late_0), sum(late_3), sum(late_7), max(lateness_max_ms) FROM minute_stats GROUP BY minute;
VACUUM ANALYZE minute_stats; VACUUM ANALYZE minute_totals; VACUUM ANALYZE attempts;
SELECT count(*) FROM attempts; SELECT count(*) FROM minute_stats;
SET plan_cache_mode = force_generic_plan;
PREPARE totals(timestamptz) AS SELECT minute, sum(attempts), sum(failed_attempts), sum(delivered), sum(failed), max(lateness_max_ms), sum(late_0), sum(late_3), sum(late_7), sum(late_45) FROM minute_totals WHERE minute >= $1 GROUP BY minute;
PREPARE one(timestamptz, uuid) AS SELECT s.minute, sum(attempts), sum(failed_attempts), sum(late_0), sum(late_45) FROM minute_stats s WHERE s.minute >= $1 AND s.endpoint_id = $2 GROUP BY s.minute;
PREPARE owner(timestamptz, text) AS SELECT s.minute, sum(attempts), sum(failed_attempts), sum(late_0), sum(late_45) FROM minute_stats s WHERE s.minute >= $1 AND s.endpoint_id IN (SELECT id FROM endpoints WHERE owner = $2) GROUP BY s.minute;
PREPARE failing(timestamptz, bigint) AS WITH top AS (SELECT s.endpoint_id, sum(s.failed_attempts) AS failed_attempts FROM minute_stats s WHERE s.minute >= $1 AND s.failed_attempts > 0 GROUP BY s.endpoint_id ORDER BY 2 DESC, 1 LIMIT $2) SELECT t.endpoint_id, t.failed_attempts, (SELECT sum(a.attempts) FROM minute_stats a WHERE a.endpoint_id = t.endpoint_id AND a.minute >= $1), e.url FROM top t LEFT JOIN endpoints e ON e.id = t.endpoint_id ORDER BY t.failed_attempts DESC, t.endpoint_id;
\o /dev/null
EXECUTE totals(now() - interval '24 hours'); EXECUTE totals(now() - interval '24 hours'); EXECUTE totals(now() - interval '24 hours');
EXECUTE totals(now() - interval '1 hour'); EXECUTE totals(now() - interval '1 hour');
EXECUTE failing(now() - interval '24 hours', 10); EXECUTE failing(now() - interval '24 hours', 10); EXECUTE failing(now() - interval '24 hours', 10);
EXECUTE failing(now() - interval '1 hour', 10); EXECUTE failing(now() - interval '1 hour', 10);
EXECUTE one(now() - interval '24 hours', '00000000-0000-7000-8000-000000000004'); EXECUTE one(now() - interval '24 hours', '00000000-0000-7000-8000-000000000004');
EXECUTE owner(now() - interval '24 hours', 'owner-7'); EXECUTE owner(now() - interval '24 hours', 'owner-7');
SQL
