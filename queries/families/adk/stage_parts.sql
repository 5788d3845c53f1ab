-- name: stage_parts
-- One row per content part (and per compaction-summary part) of the events in `staged`; a function_response's rows are counted and sized by stage_results.
-- params: (none)
-- Sizes: text and thoughts count their characters; a function_call its name plus
-- its args as compact JSON; a function_response its name plus its response as
-- compact JSON (or the `chars` a family gave it); any other part its payload (inline_data, file_data, executable
-- code or its result) as compact JSON.
CREATE OR REPLACE TEMP TABLE staged_parts AS
WITH raw_parts AS (
    SELECT app_name, user_id, session_id, event_id, 'content' AS origin,
           unnest(e.content.parts) AS p,
           generate_subscripts(e.content.parts, 1) - 1 AS part_index
    FROM staged
    WHERE valid
    UNION ALL
    SELECT app_name, user_id, session_id, event_id, 'compaction' AS origin,
           unnest(c.parts) AS p, generate_subscripts(c.parts, 1) - 1 AS part_index
    FROM (
        SELECT app_name, user_id, session_id, event_id,
               coalesce(e.actions.compaction.compacted_content,
                        e.actions.compaction.compactedContent) AS c
        FROM staged
        WHERE valid
    )
    WHERE c.parts IS NOT NULL
),
kinded AS (
    SELECT *,
           coalesce(p.function_call, p.functionCall) AS fc,
           coalesce(p.function_response, p.functionResponse) AS fr,
           CASE WHEN coalesce(p.function_call, p.functionCall) IS NOT NULL THEN 'function_call'
                WHEN coalesce(p.function_response, p.functionResponse) IS NOT NULL
                    THEN 'function_response'
                WHEN p.text IS NOT NULL AND coalesce(p.thought, false) THEN 'thought'
                WHEN p.text IS NOT NULL THEN 'text'
                ELSE 'other' END AS kind
    FROM raw_parts
),
payloads AS (
    SELECT *,
           CASE kind WHEN 'function_call' THEN coalesce(fc.args, '{}')::VARCHAR
                     WHEN 'function_response' THEN coalesce(fr.response, '{}')::VARCHAR
           END AS payload
    FROM kinded
),
valued AS (
    -- separators and escaped quotes counted on the first 8 KB only, and scaled to
    -- the whole payload beyond that: a tool result's rows are alike, and a full
    -- pass over every 500 KB result cost more than the rest of the part together
    SELECT *,
           head_separators(pieces)
               - (length(head) - length(replace(head, '\"', ''))) // 2 AS head_extra
    FROM (
        SELECT *, head_pieces(head) AS pieces
        FROM (SELECT *, left(payload, 8192) AS head FROM payloads)
    )
)
SELECT
    app_name, user_id, session_id, event_id, origin, part_index::INTEGER AS part_index, kind,
    coalesce(fc.name, fr.name) AS tool_name,
    coalesce(fc.id, fr.id) AS function_call_id,
    coalesce(p.thought_signature, p.thoughtSignature) IS NOT NULL AS has_thought_signature,
    CASE kind
        WHEN 'text' THEN length(p.text)
        WHEN 'thought' THEN length(p.text)
        WHEN 'function_call' THEN
            length(coalesce(fc.name, '')) + length(coalesce(fc.args, '{}')::VARCHAR)
        -- a family that knows what the model read gives it (Claude Code: the result's text)
        WHEN 'function_response' THEN coalesce(fr.chars,
            length(coalesce(fr.name, '')) + length(coalesce(fr.response, '{}')::VARCHAR))
        ELSE coalesce(length(coalesce(p.inline_data, p.inlineData)::VARCHAR), 0)
            + coalesce(length(coalesce(p.file_data, p.fileData)::VARCHAR), 0)
            + coalesce(length(coalesce(p.executable_code, p.executableCode)::VARCHAR), 0)
            + coalesce(length(coalesce(p.code_execution_result,
                                       p.codeExecutionResult)::VARCHAR), 0)
    END::BIGINT AS chars,
    -- The payload's size when ADK relays it to another agent as "For context"
    -- text (_fencing._present_other_agent_message renders args and responses
    -- with Python's str()): compact JSON plus a space after every ':' and ','
    -- outside strings, with \" written as ". Exact up to 8 KB, scaled from the
    -- first 8 KB above that. Text parts relay as written.
    CASE WHEN payload IS NULL THEN chars
         WHEN length(payload) <= 8192 THEN length(payload) + head_extra
         ELSE length(payload) + round(head_extra * length(payload) / 8192)
    END::BIGINT AS relay_chars,
    -- what `chars` measures, cut to 2,000 characters: enough to recognise a
    -- payload, while the store stays a fraction of the source's size
    left(CASE kind
        WHEN 'text' THEN p.text
        WHEN 'thought' THEN p.text
        WHEN 'function_call' THEN coalesce(fc.args, '{}')::VARCHAR
        WHEN 'function_response' THEN coalesce(fr.response, '{}')::VARCHAR
        ELSE coalesce(p.inline_data, p.inlineData, p.file_data, p.fileData, p.executable_code,
                      p.executableCode, p.code_execution_result, p.codeExecutionResult)::VARCHAR
    END, 2000) AS preview
FROM valued;
