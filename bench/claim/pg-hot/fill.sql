-- Deposits :lo..:hi into inbox 'benchclaims' as the store's deposit leaves
-- them (a tasks row, its frame, its inbox:deposited event by the trigger).
-- Names without ':' because pgbench reads ':name' as a variable.
INSERT INTO tasks (task_id, nid, content_type, priority, enqueued_at, expires_at, queue, state, dag_hash,
                   dedup_key, frame_hash, created_at, updated_at, result_ttl_seconds, lease_expiry)
SELECT 't' || g, 'benchclaims', 'application/json', 0, nps_now_ms(), nps_now_ms() + 3600000, 'queued', 'PENDING',
       md5('dag') || md5('dag'), md5(g::text) || md5('k' || g), md5('f' || g) || md5(g::text),
       nps_now_ms(), nps_now_ms(), 3600, 0
FROM generate_series(:lo, :hi) g;
INSERT INTO frames (message_id, payload)
SELECT message_id, convert_to('{"task_id":"' || task_id || '","dag":{"nodes":[{"id":"n1","action":"nwp://a.example/x",'
                              '"agent":"urn:nps:agent:a.example:x"}]}}', 'UTF8')
FROM tasks WHERE message_id NOT IN (SELECT message_id FROM frames);
