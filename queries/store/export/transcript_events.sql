-- name: transcript_events
-- The exported sessions' transcript details (Claude Code: usage by cache TTL, message and request ids, file and line).
-- params: (none)
SELECT t.*
FROM transcript_events AS t
JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY t.app_name, t.user_id, t.session_id, t.epoch, t.event_id;
