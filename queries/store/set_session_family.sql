-- name: set_session_family
-- The sessions ingest $ingest_id created were written by $family (adk unless a source says otherwise).
-- params: $family, $ingest_id
UPDATE sessions SET family = $family WHERE ingest_id = $ingest_id;
