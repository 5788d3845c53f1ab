-- name: made_payloads
-- The tool results a family made itself, each with its response as JSON text, as result_payloads.sql gives them (for families/adk/results.py to size).
-- params: (none)
SELECT app_name, user_id, session_id, event_id, origin, part_index::INTEGER AS part_index,
       payload::VARCHAR AS payload
FROM made_parts
WHERE payload IS NOT NULL;
