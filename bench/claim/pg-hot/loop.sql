-- One batch of the store's hot path, as PostgresStore sends it
-- (src/store/postgres/pg_claims.cpp kClaimHeadSql, pg_leases.cpp
-- kCompleteAllSql), with the parameters written in: claim up to 64 from
-- the head, then complete the claimed ones. CAST, not '::', for pgbench.
WITH n AS MATERIALIZED (SELECT nps_now_ms() AS now),
c AS (SELECT message_id FROM tasks WHERE nid = 'benchclaims' AND queue = 'queued'
      AND lease_expiry <= (SELECT now FROM n) AND expires_at > (SELECT now FROM n)
      AND message_id <> ALL (CAST('{}' AS bigint[])) ORDER BY priority DESC, message_id LIMIT 64 FOR UPDATE SKIP LOCKED),
u AS (UPDATE tasks t SET prev_owner = t.lease_owner, lease_owner = 'benchrunner', lease_expiry = (SELECT now FROM n) + 60000,
      claims = t.claims + 1, expires_at = 9223372036854775807, state = 'RUNNING', updated_at = (SELECT now FROM n)
      WHERE t.message_id = ANY (ARRAY(SELECT message_id FROM c))
      RETURNING t.message_id, t.nid, t.task_id, t.content_type, t.priority, t.enqueued_at, t.expires_at, t.prev_owner,
                t.claims, t.dedup_key, t.dag_hash, (SELECT f.payload FROM frames f WHERE f.message_id = t.message_id),
                t.lease_expiry)
SELECT CAST(array_agg(task_id) AS text) AS ids, count(*) AS claimed FROM u \gset
WITH n AS MATERIALIZED (SELECT nps_now_ms() AS now),
u AS (UPDATE tasks SET queue = 'done', state = 'COMPLETED', error_code = NULL, error_message = NULL, aggregate = NULL,
      lease_owner = NULL, lease_expiry = 0, updated_at = (SELECT now FROM n)
      WHERE task_id = ANY (CAST(:ids AS text[])) AND lease_owner = 'benchrunner' AND lease_expiry > (SELECT now FROM n)
      RETURNING 1)
SELECT CASE WHEN count(*) = :claimed THEN count(*) ELSE nps_fail('NPS01', 'a task of the batch is not leased') END FROM u;
