-- name: stage_parts
-- One row per content part (and per compaction-summary part) of the events in `staged`.
-- params: (none)
-- Sizes: text and thoughts count their characters; a function_call its name plus
-- its args as compact JSON; a function_response its name plus its response as
-- compact JSON; any other part its whole compact JSON. camelCase (ADK web API)
-- and snake_case (model_dump) keys are both read.
CREATE OR REPLACE TEMP TABLE staged_parts AS
WITH raw_parts AS (
    SELECT app_name, user_id, session_id, event_id, 'content' AS origin,
           unnest(json_extract(j, '$.content.parts[*]')) AS part,
           generate_subscripts(json_extract(j, '$.content.parts[*]'), 1) - 1 AS part_index
    FROM staged
    UNION ALL
    SELECT app_name, user_id, session_id, event_id, 'compaction' AS origin,
           unnest(json_extract(c, '$.parts[*]')) AS part,
           generate_subscripts(json_extract(c, '$.parts[*]'), 1) - 1 AS part_index
    FROM (
        SELECT app_name, user_id, session_id, event_id,
               coalesce(present(j, '$.actions.compaction.compacted_content'),
                        present(j, '$.actions.compaction.compactedContent')) AS c
        FROM staged
    )
    WHERE c IS NOT NULL
),
typed AS (
    SELECT *,
           coalesce(present(part, '$.function_call'), present(part, '$.functionCall')) AS fc,
           coalesce(present(part, '$.function_response'),
                    present(part, '$.functionResponse')) AS fr,
           part ->> '$.text' AS text,
           coalesce(TRY_CAST(part ->> '$.thought' AS BOOLEAN), false) AS thought
    FROM raw_parts
),
kinded AS (
    SELECT *,
           CASE WHEN fc IS NOT NULL THEN 'function_call'
                WHEN fr IS NOT NULL THEN 'function_response'
                WHEN text IS NOT NULL AND thought THEN 'thought'
                WHEN text IS NOT NULL THEN 'text'
                ELSE 'other' END AS kind,
           present(fr, '$.response') AS response
    FROM typed
)
SELECT
    app_name, user_id, session_id, event_id, origin, part_index::INTEGER AS part_index, kind,
    coalesce(fc ->> '$.name', fr ->> '$.name') AS tool_name,
    coalesce(fc ->> '$.id', fr ->> '$.id') AS function_call_id,
    coalesce(present(part, '$.thought_signature'),
             present(part, '$.thoughtSignature')) IS NOT NULL AS has_thought_signature,
    CASE kind
        WHEN 'text' THEN length(text)
        WHEN 'thought' THEN length(text)
        WHEN 'function_call' THEN
            length(coalesce(fc ->> '$.name', '')) + length(coalesce(fc -> '$.args', '{}')::VARCHAR)
        WHEN 'function_response' THEN
            length(coalesce(fr ->> '$.name', '')) + length(coalesce(response, '{}')::VARCHAR)
        ELSE length(part::VARCHAR)
    END::BIGINT AS chars,
    CASE
        WHEN kind <> 'function_response' OR response IS NULL THEN NULL
        WHEN json_type(response) = 'ARRAY' THEN json_array_length(response)
        WHEN json_type(response) = 'OBJECT' THEN (
            -- the longest list of records among the top-level values, or among
            -- the values of `result` (how ADK wraps a tool's non-dict return)
            SELECT max(json_array_length(v))
            FROM (
                SELECT unnest(map_values(json_transform(response, '"MAP(VARCHAR, JSON)"'))) AS v
                UNION ALL
                SELECT unnest(map_values(json_transform(response -> '$.result',
                                                        '"MAP(VARCHAR, JSON)"')))
                WHERE json_type(response -> '$.result') = 'OBJECT'
                UNION ALL
                SELECT response -> '$.result'
            )
            WHERE json_type(v) = 'ARRAY' AND json_type(v, '$[0]') IN ('OBJECT', 'ARRAY')
        )
    END::INTEGER AS row_count
FROM kinded;
