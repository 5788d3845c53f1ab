-- name: made_responses
-- result_responses.sql's rows of the tool results a family made itself: those `results_to_size` names, their response read from its JSON text.
-- params: (none)
SELECT app_name, user_id, session_id, event_id, origin, part_index::INTEGER AS part_index,
       {'response': payload::JSON} AS fr, payload::VARCHAR AS payload
FROM made_parts
SEMI JOIN results_to_size USING (app_name, user_id, session_id, event_id, part_index)
WHERE payload IS NOT NULL
