-- name: traced_parts
-- Parts of the traced requests this import added (those of ingest $ingest_id); others are stored already.
-- params: $ingest_id
INSERT INTO traced_parts BY NAME
SELECT i.* FROM imported AS i
JOIN traced_calls AS t USING (session_id, event_id)
WHERE t.ingest_id = $ingest_id;
