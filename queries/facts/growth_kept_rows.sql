-- name: growth_kept_rows
-- The kept growth figures (`growth_kept`, forensics/analysis/kept_growth.py) of the sessions in `scope_sessions`: growth_figures.sql's rows, computed once for every session.
-- params: (none)
SELECT k.*
FROM growth_kept AS k
SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
ORDER BY k.app_name, k.user_id, k.session_id, k.ordinal;
