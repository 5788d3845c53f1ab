-- name: set_session_sources
-- The sessions ingest $ingest_id created, or read whole again (`replaced`), take the source in `session_sources` (their own files).
-- params: $ingest_id
UPDATE sessions AS s
SET source = n.source
FROM session_sources AS n
WHERE s.app_name = n.app_name AND s.user_id = n.user_id AND s.session_id = n.session_id
  AND (s.ingest_id = $ingest_id OR n.replaced);
