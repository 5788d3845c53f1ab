-- name: events
-- The exported sessions' events, with the UTC day they happened on (a partition key).
-- params: (none)
SELECT e.*, strftime(e.timestamp, '%Y-%m-%d') AS day
FROM events AS e
JOIN export_keys USING (app_name, user_id, session_id)
ORDER BY e.app_name, e.user_id, e.session_id, e.epoch, e.event_id;
