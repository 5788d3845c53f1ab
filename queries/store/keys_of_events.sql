-- name: keys_of_events
-- The distinct (app, user, session) keys under which any of the event ids in $events is stored.
-- params: $events
SELECT DISTINCT app_name, user_id, session_id
FROM events
WHERE list_contains($events, event_id)
ORDER BY app_name, user_id, session_id;
