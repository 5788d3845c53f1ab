-- name: adk_errors
-- The stored error code and message of the ADK events that are failed calls, by session and event id (the ids a list of failed calls names).
-- params: $session_ids, $event_ids
SELECT e.app_name, e.user_id, e.session_id, e.event_id, e.error_code, e.error_message
FROM events AS e
WHERE e.error_code IS NOT NULL
  AND e.session_id IN (SELECT unnest($session_ids::VARCHAR[]))
  AND e.event_id IN (SELECT unnest($event_ids::VARCHAR[]));
