-- name: anchor_sessions
-- The selection's sessions whose tool results were searched for anchors (store schema 12): the others' anchors are unknown.
-- params: (none)
SELECT app_name, user_id, session_id
FROM anchor_sessions
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
ORDER BY app_name, user_id, session_id;
