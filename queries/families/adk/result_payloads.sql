-- name: result_payloads
-- Each function_response part of the events in `staged` with its response as JSON text, for families/adk/results.py to size (stage_results.sql sizes what it declines).
-- params: (none)
SELECT app_name, user_id, session_id, event_id, 'content' AS origin, part_index,
       coalesce(p.function_response, p.functionResponse).response::VARCHAR AS payload
FROM (
    SELECT app_name, user_id, session_id, event_id, unnest(e.content.parts) AS p,
           (generate_subscripts(e.content.parts, 1) - 1)::INTEGER AS part_index
    FROM staged
    WHERE valid
)
WHERE coalesce(p.function_response, p.functionResponse).response IS NOT NULL;
