-- name: ccusage_users
-- The users whose Claude Code usage the sessions in `scope_sessions` hold: ccusage totals one user's transcripts (one config folder) at a time.
-- params: (none)
SELECT DISTINCT t.user_id
FROM transcript_events AS t
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
ORDER BY t.user_id;
