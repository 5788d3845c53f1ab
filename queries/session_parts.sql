-- name: session_parts
-- Parts of the selected sessions' events (as session_events selects them).
-- params: $session, $sessions, $source
SELECT p.app_name, p.user_id, p.session_id, p.event_id, p.origin, p.part_index, p.kind,
       p.tool_name, p.function_call_id, p.has_thought_signature, p.chars, p.relay_chars,
       p.row_count
FROM parts AS p
JOIN sessions AS s USING (app_name, user_id, session_id)
WHERE ($session IS NULL OR p.session_id = $session)
  AND ($sessions IS NULL OR list_contains($sessions, p.session_id))
  AND ($source IS NULL OR s.source = $source)
ORDER BY p.app_name, p.user_id, p.session_id, p.event_id, p.origin, p.part_index;
