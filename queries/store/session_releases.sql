-- name: session_releases
-- Per stored session that a traced request's event belongs to, each google-adk release those requests name.
-- params: (none)
SELECT DISTINCT e.app_name, e.user_id, t.session_id, t.adk_version
FROM traced_calls AS t
JOIN events AS e ON e.session_id = t.session_id AND e.event_id = t.event_id
WHERE t.adk_version IS NOT NULL;
