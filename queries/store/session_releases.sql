-- name: session_releases
-- Per traced session id, each google-adk release its traced requests name.
-- params: (none)
SELECT DISTINCT session_id, adk_version
FROM traced_calls
WHERE adk_version IS NOT NULL;
