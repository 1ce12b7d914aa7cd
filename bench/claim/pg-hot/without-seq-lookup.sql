-- Variant: event rows written without the per-row max(seq) lookup, the
-- (message_id, seq) index and the join of old and new rows (an upper bound
-- for a sequence counter kept on the task row).
ALTER TABLE events DROP CONSTRAINT events_message_id_seq_key;
CREATE OR REPLACE FUNCTION tasks_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (message_id, seq, at, name, detail)
    SELECT n.message_id, 0, n.updated_at, CASE WHEN n.claims > 0 AND n.queue = 'queued' THEN 'lease:granted'
                                               ELSE 'task:completed' END, '{}'
    FROM new_rows n;
    RETURN NULL;
END $$;
