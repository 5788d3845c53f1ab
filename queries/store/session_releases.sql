-- name: session_releases
-- Per traced session id, the google-adk release its traced requests name (the newest, if several).
-- params: (none)
SELECT session_id, max(adk_version) AS adk_version
FROM traced_calls
WHERE adk_version IS NOT NULL
GROUP BY session_id;
