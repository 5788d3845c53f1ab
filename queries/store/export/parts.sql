-- name: parts
-- The exported sessions' parts, with the day of their event (a partition key).
-- params: (none)
SELECT p.*, strftime(e.timestamp, '%Y-%m-%d') AS day
FROM parts AS p
JOIN events AS e USING (app_name, user_id, session_id, event_id)
JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY p.app_name, p.user_id, p.session_id, p.event_id, p.origin, p.part_index;
