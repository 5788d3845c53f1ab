-- name: orphan_sessions
-- The sessions with stored facts and no stored event: their events were deleted since (a transcript read again with nothing in it replaces the session's events with none), so their facts go too.
-- params: (none)
SELECT f.app_name, f.user_id, f.session_id
FROM fact_sessions AS f
ANTI JOIN (SELECT DISTINCT app_name, user_id, session_id FROM events) AS e
    USING (app_name, user_id, session_id)
ORDER BY ALL;
