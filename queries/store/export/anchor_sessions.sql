-- name: anchor_sessions
-- The exported sessions searched for anchors.
-- params: (none)
SELECT s.*
FROM anchor_sessions AS s
JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY s.app_name, s.user_id, s.session_id;
