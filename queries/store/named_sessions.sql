-- name: named_sessions
-- The first ten session ids a stored session, a logged record or a traced request names, in order (what `failures SESSION` of an unknown id names: a session may be known from its logs alone).
-- params: (none)
SELECT session_id FROM (
    SELECT session_id FROM sessions
    UNION SELECT session_id FROM logged WHERE session_id IS NOT NULL
    UNION SELECT session_id FROM traced_calls WHERE session_id IS NOT NULL
)
ORDER BY session_id
LIMIT 10;
