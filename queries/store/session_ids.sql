-- name: session_ids
-- The first ten stored session ids, in order (what an error about a session id names).
-- params: (none)
SELECT DISTINCT session_id FROM sessions ORDER BY session_id LIMIT 10;
