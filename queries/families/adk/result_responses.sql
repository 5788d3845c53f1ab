-- name: result_responses
-- The function_response parts of the events in `staged` that `results_to_size` names (families/adk/results.py declined them), each with its response (`fr.response`) and that as JSON text, for stage_results.sql (made_responses.sql gives the same of a family's own rows).
-- params: (none)
SELECT app_name, user_id, session_id, event_id, origin, part_index,
       {'response': coalesce(p.function_response, p.functionResponse).response} AS fr,
       coalesce(p.function_response, p.functionResponse).response::VARCHAR AS payload
FROM (
    SELECT app_name, user_id, session_id, event_id, 'content' AS origin,
           unnest(e.content.parts) AS p,
           (generate_subscripts(e.content.parts, 1) - 1)::INTEGER AS part_index
    FROM staged
    WHERE valid
)
SEMI JOIN results_to_size USING (app_name, user_id, session_id, event_id, part_index)
WHERE coalesce(p.function_response, p.functionResponse).response IS NOT NULL
