-- name: by_invocation
-- Plan check: the events of one turn by invocation_id alone (ADK creates no index for it).
-- params: $invocation_id
SELECT id, session_id, "timestamp"
FROM events
WHERE invocation_id = $invocation_id
