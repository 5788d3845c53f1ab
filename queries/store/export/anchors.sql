-- name: anchors
-- The exported sessions' anchors (Claude Code: strings a later call reproduced from a tool result, where in the result).
-- params: (none)
SELECT a.*
FROM anchors AS a
JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY a.app_name, a.user_id, a.session_id, a.function_call_id, a.anchor_index;
