-- name: session_parts
-- Parts of the selected sessions' events, for window reconstruction.
-- params: $session
SELECT app_name, user_id, session_id, event_id, origin, part_index, kind, tool_name,
       function_call_id, has_thought_signature, chars, relay_chars, row_count
FROM parts
WHERE $session IS NULL OR session_id = $session
ORDER BY app_name, user_id, session_id, event_id, origin, part_index;
