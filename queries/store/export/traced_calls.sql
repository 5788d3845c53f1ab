-- name: traced_calls
-- The traced requests of the exported sessions (traces name the session id alone).
-- params: (none)
SELECT t.* FROM traced_calls AS t
WHERE t.session_id IN (SELECT session_id FROM export_keys)
ORDER BY t.session_id, t.event_id;
