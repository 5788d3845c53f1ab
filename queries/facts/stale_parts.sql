-- name: stale_parts
-- The parts of the sessions in `stale_keys`, in key order (session, event, origin, position).
-- params: (none)
SELECT p.app_name, p.user_id, p.session_id, p.event_id, p.origin, p.part_index, p.kind,
       p.tool_name, p.function_call_id, p.has_thought_signature, p.chars, p.relay_chars,
       p.row_count
FROM parts AS p
SEMI JOIN stale_keys AS k USING (app_name, user_id, session_id)
ORDER BY p.app_name, p.user_id, p.session_id, p.event_id, p.origin, p.part_index;
