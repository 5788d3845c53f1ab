-- name: guard_sizes
-- Per tool result of the sessions in `scope_sessions`: what the guards audit (forensics/whatif/audit.py) reads of it, as results.sql gives it for a guard of token cap $budget: its payload's shape, its rows, and on the guard's own estimate (a row's json.dumps length over $chars_per_token, rounded up) the whole result's tokens, its rows' tokens, the largest row and the rows over $budget. These need no running sum over the rows (what fit.py is for), so the rows' sizes are reduced here, each part's lists as they are scanned, and no list leaves DuckDB. The result's part is picked as result_rows.sql picks it (its first function response of the call id); results of a session without a fitted model are left out as there.
-- params: $budget, $chars_per_token
WITH tokened AS (
    SELECT app_name, user_id, session_id, function_call_id, event_id, part_index, rows_key,
           envelope_chars, envelope_extra, markdown_chars, len(row_chars) AS n,
           len(row_extra) IS DISTINCT FROM len(row_chars) AS unequal,
           list_count(row_chars) < len(row_chars) OR list_count(row_extra) < len(row_extra)
               AS has_null,
           list_sum(row_chars)::BIGINT + list_sum(row_extra)::BIGINT AS dumps_rows,
           list_transform(row_chars, lambda c, i: CAST(ceil((c::BIGINT + row_extra[i])
                                                            / $chars_per_token) AS BIGINT))
               AS tokens
    FROM parts
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    WHERE kind = 'function_response' AND origin = 'content'
), reduced AS (
    SELECT * EXCLUDE (tokens),
           CASE WHEN n > 0 THEN list_max(tokens) END AS largest_row,
           CASE WHEN n > 0 THEN list_sum(tokens)::BIGINT END AS row_tokens,
           coalesce(len(list_filter(tokens, lambda t: t > $budget)), 0) AS rows_over
    FROM tokened
), picked AS (
    SELECT g.app_name, g.user_id, g.session_id, g.ordinal, g.tool_name,
           p.rows_key, p.envelope_chars, p.envelope_extra, p.markdown_chars, p.n,
           CASE WHEN p.n > 0 THEN p.dumps_rows END AS dumps_rows,
           p.largest_row, p.row_tokens, coalesce(p.rows_over, 0) AS rows_over,
           p.unequal, p.has_null
    FROM fact_tool_calls AS g
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
    SEMI JOIN scope_ratios AS r ON r.model = fs.main_model
    LEFT JOIN reduced AS p
        ON p.app_name = g.app_name AND p.user_id = g.user_id AND p.session_id = g.session_id
       AND p.function_call_id = g.function_call_id
    QUALIFY row_number() OVER (PARTITION BY g.app_name, g.user_id, g.session_id, g.ordinal
                               ORDER BY p.event_id, p.part_index) = 1
)
SELECT app_name, user_id, session_id, ordinal, tool_name,
       CASE WHEN envelope_chars IS NULL THEN 'unsized'
            WHEN rows_key IS NULL THEN 'dict'
            WHEN rows_key = '$' THEN 'list'
            ELSE 'rows in ' || rows_key END AS payload,
       n AS "rows",
       CAST(ceil((envelope_chars + envelope_extra + coalesce(dumps_rows, 0)
                  + 2 * greatest(coalesce(n, 0) - 1, 0)) / $chars_per_token) AS BIGINT)
           AS guard_tokens,
       largest_row AS largest_row_guard_tokens, row_tokens AS row_guard_tokens,
       rows_over AS rows_over_budget, dumps_rows AS rows_dumps_chars, markdown_chars
FROM picked
-- as fit.py refuses the results it reads: the two lists differ in length, a size is null
WHERE CASE WHEN unequal THEN error('row_chars and row_extra differ in length for a result')
           WHEN has_null THEN error('a row size is null') ELSE true END
ORDER BY app_name, user_id, session_id, ordinal;
