-- name: insert_parts
-- Add the parts in `staged_parts` that the store does not hold yet.
-- params: (none)
INSERT OR IGNORE INTO parts
SELECT app_name, user_id, session_id, event_id, origin, part_index, kind, tool_name,
       function_call_id, has_thought_signature, chars, row_count
FROM staged_parts;
