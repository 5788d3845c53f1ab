-- name: session_parts
-- Parts of the selected sessions' events (as session_events selects them).
-- params: $app, $user, $session, $since, $until, $sessions, $source
SELECT p.app_name, p.user_id, p.session_id, p.event_id, p.origin, p.part_index, p.kind,
       p.tool_name, p.function_call_id, p.has_thought_signature, p.chars, p.relay_chars,
       p.row_count
FROM parts AS p
JOIN sessions AS s USING (app_name, user_id, session_id)
WHERE ($app IS NULL OR p.app_name = $app)
  AND ($user IS NULL OR p.user_id = $user)
  AND ($session IS NULL OR p.session_id = $session)
  AND ($sessions IS NULL OR list_contains($sessions, p.session_id))
  AND ($source IS NULL OR s.source = $source)
  AND (($since IS NULL AND $until IS NULL) OR EXISTS (
        SELECT 1 FROM events AS t
        WHERE t.app_name = p.app_name AND t.user_id = p.user_id AND t.session_id = p.session_id
          AND ($since IS NULL OR t.epoch >= $since) AND ($until IS NULL OR t.epoch < $until)))
ORDER BY p.app_name, p.user_id, p.session_id, p.event_id, p.origin, p.part_index;
