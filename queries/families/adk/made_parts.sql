-- name: made_parts
-- The parts a family made itself (`made_parts`, model.MADE_PART_SCHEMA) in stage_parts.sql's columns and types, for `staged_parts`.
-- params: (none)
SELECT app_name, user_id, session_id, event_id, origin, part_index::INTEGER AS part_index,
       kind, tool_name, function_call_id, has_thought_signature, chars, relay_chars, preview
FROM made_parts
