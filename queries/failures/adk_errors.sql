-- name: adk_errors
-- The stored error code and message of the events that are failed calls (ADK's, Claude Code's), by session and event id (the ids a list of failed calls names), with the family that wrote them.
-- params: $session_ids, $event_ids
SELECT e.app_name, e.user_id, e.session_id, e.event_id, e.error_code, e.error_message,
       s.family
FROM events AS e
JOIN sessions AS s USING (app_name, user_id, session_id)
WHERE e.error_code IS NOT NULL
  AND e.session_id IN (SELECT unnest($session_ids::VARCHAR[]))
  AND e.event_id IN (SELECT unnest($event_ids::VARCHAR[]));
