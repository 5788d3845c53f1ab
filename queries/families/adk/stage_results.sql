-- name: stage_results
-- What a tool-output guard sizes (forensics/whatif/), per function_response of `result_responses` (result_responses.sql: the parts families/adk/results.py declined; this is the definition it follows), apart from stage_parts so that its copies of the largest payloads are not held beside all of that statement's: where the rows are, each row's compact JSON length and what Python's json.dumps adds to it, the same for the rest of the response, and the rows as a markdown table when flat.
-- params: (none)
CREATE OR REPLACE TEMP TABLE staged_results AS
WITH responses AS (FROM result_responses),
listed AS (
    -- a tool result's rows: the longest list of records (a list whose first item is
    -- an object or a list) among the response itself, its top-level values and the
    -- values of `result` (how ADK wraps a tool's non-dict return); the first on ties.
    -- DuckDB writes JSON compactly, so the first characters tell the shape.
    SELECT *,
           list_transform(candidates, lambda v: CASE WHEN left(v::VARCHAR, 2) IN ('[{', '[[')
                                                     THEN json_array_length(v) END) AS lengths
    FROM (
        SELECT *,
               CASE WHEN left(fr.response::VARCHAR, 2) IN ('[{', '[[') THEN ['$']
                    WHEN left(fr.response::VARCHAR, 1) = '{' THEN json_keys(fr.response)
                        || CASE WHEN starts_with(fr.response::VARCHAR, '{"result":{')
                                THEN list_transform(json_keys(fr.response, '$.result'),
                                                    lambda k: 'result.' || k)
                                ELSE [] END
               END AS candidate_keys,
               CASE WHEN left(fr.response::VARCHAR, 2) IN ('[{', '[[') THEN [fr.response::JSON]
                    WHEN left(fr.response::VARCHAR, 1) = '{' THEN json_extract(fr.response, '$.*')
                        || CASE WHEN starts_with(fr.response::VARCHAR, '{"result":{')
                                THEN json_extract(fr.response, '$.result.*') ELSE [] END
               END AS candidates
        FROM responses
    )
),
picked AS (
    -- list_position finds a null too: only a list of records is a candidate
    SELECT * EXCLUDE (candidates),
           candidate_keys[best_index] AS rows_path,
           lengths[best_index] AS rows_n,
           json_extract(candidates[best_index], '$[*]') AS result_rows
    FROM (
        SELECT *, CASE WHEN list_max(lengths) IS NOT NULL
                       THEN list_position(lengths, list_max(lengths)) END AS best_index
        FROM listed
    )
),
shaped AS (
    SELECT *,
           -- the response with its rows list emptied (a result without rows: all of it)
           CASE WHEN rows_path IS NULL THEN payload
                WHEN rows_path = '$' THEN '[]'
                WHEN starts_with(rows_path, 'result.') THEN json_merge_patch(fr.response,
                    '{"result":{' || to_json(rows_path[8:])::VARCHAR || ':[]}}')::VARCHAR
                ELSE json_merge_patch(fr.response,
                    '{' || to_json(rows_path)::VARCHAR || ':[]}')::VARCHAR
           END AS envelope
    FROM picked
)
SELECT
    app_name, user_id, session_id, event_id, origin, part_index,
    rows_n::INTEGER AS row_count,  -- the records in it (growth's rows)
    -- what a tool-output guard sizes (forensics/whatif/): where the rows are, each row's
    -- compact JSON length, and what Python's json.dumps adds to it (a space after every
    -- ':' and ',' outside strings, \uXXXX for each non-ASCII character), exactly; the
    -- same for the rest of the response
    rows_path AS rows_key,
    list_transform(result_rows, lambda x: length(x::VARCHAR))::INTEGER[] AS row_chars,
    list_transform(result_rows, lambda x: dumps_extra(x::VARCHAR))::INTEGER[] AS row_extra,
    length(envelope)::BIGINT AS envelope_chars,
    (separators(structure(envelope)) + ascii_extra(envelope))::BIGINT AS envelope_extra,
    -- rows of objects of scalars (macros.sql: flat) as a markdown table: a header from the
    -- first row's keys, a separator line, one line per row ('| a | b |'; a '|' escaped).
    -- An estimate, from the first 50 rows (checked flat, their lines scaled to all rows):
    -- a tool's rows are alike, and all of them cost more than the rest of the sizing
    CASE WHEN len(result_rows) > 0
              AND list_bool_and(list_transform(result_rows[1:50], lambda x: flat(x::VARCHAR)))
         THEN markdown_line(json_keys(result_rows[1]))
              + 4 * len(json_keys(result_rows[1])) + 2
              + round(list_sum(list_transform(result_rows[1:50],
                    lambda x: markdown_line(json_extract_string(x, '$.*'))))
                      * len(result_rows) / least(len(result_rows), 50))
    END::BIGINT AS markdown_chars
FROM shaped;
