-- name: stage_parts
-- One row per content part (and per compaction-summary part) of the events in `staged`.
-- params: (none)
-- Sizes: text and thoughts count their characters; a function_call its name plus
-- its args as compact JSON; a function_response its name plus its response as
-- compact JSON; any other part its payload (inline_data, file_data, executable
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
           length(bare) - length(replace(replace(bare, ':', ''), ',', ''))
               - (length(head) - length(replace(head, '\"', ''))) // 2 AS head_extra
    FROM (
        SELECT *, regexp_replace(head, '"(?:[^"\\]|\\.)*"', '', 'g') AS bare
        FROM (SELECT *, left(payload, 8192) AS head FROM payloads)
    )
),
listed AS (
    -- a tool result's rows: the longest list of records (a list whose first item is
    -- an object or a list) among the response itself, its top-level values and the
    -- values of `result` (how ADK wraps a tool's non-dict return); the first on ties.
    -- DuckDB writes JSON compactly, so the first characters tell the shape.
    SELECT *,
           CASE
               WHEN kind <> 'function_response' OR fr.response IS NULL THEN NULL
               WHEN left(fr.response::VARCHAR, 2) IN ('[{', '[[')
                   THEN {'n': json_array_length(fr.response), 'neg': 0, 'path': '$',
                         'v': fr.response::JSON}
               WHEN left(fr.response::VARCHAR, 1) = '{' THEN list_sort(list_filter(
                   list_transform(
                       list_zip(json_keys(fr.response), json_extract(fr.response, '$.*')),
                       lambda kv, i: {'n': CASE WHEN left(kv[2]::VARCHAR, 2) IN ('[{', '[[')
                                                THEN json_array_length(kv[2]) END,
                                      'neg': -i, 'path': kv[1], 'v': kv[2]})
                   || coalesce(CASE WHEN starts_with(fr.response::VARCHAR, '{"result":{')
                       THEN list_transform(
                           list_zip(json_keys(fr.response, '$.result'),
                                    json_extract(fr.response, '$.result.*')),
                           lambda kv, i: {'n': CASE WHEN left(kv[2]::VARCHAR, 2) IN ('[{', '[[')
                                                    THEN json_array_length(kv[2]) END,
                                          'neg': -1000000 - i, 'path': 'result.' || kv[1],
                                          'v': kv[2]}) END, []),
                   lambda c: c.n IS NOT NULL), 'DESC')[1]
           END AS best
    FROM valued
),
shaped AS (
    SELECT *,
           CASE WHEN best IS NOT NULL THEN json_extract(best.v, '$[*]') END AS result_rows,
           -- the response with its rows list emptied (a result without rows: all of it)
           CASE WHEN kind <> 'function_response' THEN NULL
                WHEN best IS NULL THEN payload
                WHEN best.path = '$' THEN '[]'
                WHEN starts_with(best.path, 'result.') THEN json_merge_patch(fr.response,
                    '{"result":{' || to_json(best.path[8:])::VARCHAR || ':[]}}')::VARCHAR
                ELSE json_merge_patch(fr.response,
                    '{' || to_json(best.path)::VARCHAR || ':[]}')::VARCHAR
           END AS envelope
    FROM listed
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
        WHEN 'function_response' THEN
            length(coalesce(fr.name, '')) + length(coalesce(fr.response, '{}')::VARCHAR)
        ELSE coalesce(length(coalesce(p.inline_data, p.inlineData)::VARCHAR), 0)
            + coalesce(length(coalesce(p.file_data, p.fileData)::VARCHAR), 0)
            + coalesce(length(coalesce(p.executable_code, p.executableCode)::VARCHAR), 0)
            + coalesce(length(coalesce(p.code_execution_result,
                                       p.codeExecutionResult)::VARCHAR), 0)
    END::BIGINT AS chars,
    best.n::INTEGER AS row_count,
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
    END, 2000) AS preview,
    -- what a tool-output guard sizes (forensics/whatif/): where the rows are, each row's
    -- compact JSON length, and what Python's json.dumps adds to it (a space after every
    -- ':' and ',' outside strings, \uXXXX for each non-ASCII character), exactly; the
    -- same for the rest of the response (measured: one pass costs 0.8 s per 100 MB)
    best.path AS rows_key,
    list_transform(result_rows, lambda x: length(x::VARCHAR))::BIGINT[] AS row_chars,
    list_transform(result_rows, lambda x: dumps_extra(x::VARCHAR))::BIGINT[] AS row_extra,
    length(envelope)::BIGINT AS envelope_chars,
    dumps_extra(envelope)::BIGINT AS envelope_extra,
    -- rows that are all objects of scalars, as a markdown table: a header from the first
    -- row's keys, a separator line, one line per row ('| a | b |'; a '|' escaped)
    CASE WHEN len(result_rows) > 0 AND list_bool_and(list_transform(result_rows,
                  lambda x: json_type(x) = 'OBJECT' AND coalesce(list_bool_and(list_transform(
                      json_extract(x, '$.*'), lambda v: json_type(v) NOT IN ('OBJECT', 'ARRAY'))),
                      false)))
         THEN markdown_line(json_keys(result_rows[1]))
              + 4 * len(json_keys(result_rows[1])) + 2
              + list_sum(list_transform(result_rows,
                    lambda x: markdown_line(json_extract_string(x, '$.*'))))
    END::BIGINT AS markdown_chars
FROM shaped;
