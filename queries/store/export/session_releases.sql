-- name: session_releases
-- How the exported sessions' google-adk releases are known.
-- params: (none)
SELECT r.* FROM session_releases AS r JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY r.app_name, r.user_id, r.session_id, r.basis;
