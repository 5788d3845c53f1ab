-- name: results_unnested
-- Per tool result of the sessions in `scope_sessions` ($tool: only that tool's): a tool-output guard replayed on it (forensics/whatif/). Rows past min($page_size, $row_cap) go; then with $token_cap the token fit of the founding guard: the rest of the response and each row estimated as its json.dumps length over $chars_per_token (rounded up), rows kept while the running sum stays within the cap, and at least one row kept however large. A result without rows is sized whole and kept whole. What goes out is its actual characters less the rows that went (and their commas), plus the paging keys the guard adds ("total", "truncated"); tokens in the window are those characters over the fitted ratio of the session's main model, as growth sizes results. This is the definition, a row per result row (34 million rows unnested at 1,000,000 events: 48 s and 15 GB); forensics/whatif/fit.py computes the same figures from the lists and results.sql the rest. Run by the tests, which hold the two equal.
-- params: $row_cap, $token_cap, $page_size, $chars_per_token, $tool
WITH results AS (
    SELECT g.app_name, g.user_id, g.session_id, g.ordinal, g.function_call_id, g.tool_name,
           g.turn, g.agent, g.result_chars, g.resent_calls AS sends,  -- the first included
           p.rows_key, p.row_chars, p.row_extra, p.envelope_chars, p.envelope_extra,
           p.markdown_chars, len(p.row_chars) AS n,
           r.chars_per_token AS fitted
    FROM fact_tool_calls AS g
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
    JOIN scope_ratios AS r ON r.model = fs.main_model
    LEFT JOIN parts AS p
        ON p.app_name = g.app_name AND p.user_id = g.user_id AND p.session_id = g.session_id
       AND p.function_call_id = g.function_call_id AND p.kind = 'function_response'
       AND p.origin = 'content'
    WHERE $tool IS NULL OR g.tool_name = $tool
    QUALIFY row_number() OVER (PARTITION BY g.app_name, g.user_id, g.session_id, g.ordinal
                               ORDER BY p.event_id, p.part_index) = 1
), rows AS (
    SELECT app_name, user_id, session_id, ordinal,
           unnest(row_chars) AS chars, unnest(row_extra) AS extra,
           generate_subscripts(row_chars, 1) AS i
    FROM results
    WHERE n > 0
), fitted AS (
    SELECT w.*, CAST(ceil((w.chars + w.extra) / $chars_per_token) AS BIGINT) AS tokens,
           t.envelope_tokens
    FROM rows AS w
    JOIN (SELECT app_name, user_id, session_id, ordinal,
                 CAST(ceil((envelope_chars + envelope_extra) / $chars_per_token) AS BIGINT)
                     AS envelope_tokens,
                 least(n, $page_size, $row_cap) AS page
          FROM results) AS t USING (app_name, user_id, session_id, ordinal)
    WHERE w.i <= t.page
), running AS (
    SELECT *, envelope_tokens + sum(tokens) OVER (
               PARTITION BY app_name, user_id, session_id, ordinal ORDER BY i) AS used
    FROM fitted
), kept AS (
    -- how many rows the guard keeps: the page, or with a token cap the rows that fit
    -- (at least one)
    SELECT app_name, user_id, session_id, ordinal,
           CASE WHEN $token_cap IS NULL THEN count(*)
                ELSE greatest(1, count(*) FILTER (WHERE used <= $token_cap)) END AS k
    FROM running
    GROUP BY ALL
), sums AS (
    SELECT r.app_name, r.user_id, r.session_id, r.ordinal, coalesce(k.k, 0) AS k,
           CAST(sum(w.chars + w.extra) AS BIGINT) AS dumps_rows,
           coalesce(sum(w.chars) FILTER (WHERE w.i > coalesce(k.k, 0)), 0) AS gone_chars,
           coalesce(sum(w.chars + w.extra) FILTER (WHERE w.i <= coalesce(k.k, 0)), 0)
               AS kept_dumps,
           max(CAST(ceil((w.chars + w.extra) / $chars_per_token) AS BIGINT)) AS largest_row,
           CAST(sum(CAST(ceil((w.chars + w.extra) / $chars_per_token) AS BIGINT)) AS BIGINT)
               AS row_tokens,
           count(*) FILTER (WHERE CAST(ceil((w.chars + w.extra) / $chars_per_token) AS BIGINT)
                                  > $token_cap) AS rows_over
    FROM results AS r
    LEFT JOIN rows AS w USING (app_name, user_id, session_id, ordinal)
    LEFT JOIN kept AS k USING (app_name, user_id, session_id, ordinal)
    GROUP BY ALL
), replayed AS (
    SELECT r.*, s.k, s.kept_dumps, s.largest_row, s.row_tokens, s.rows_over, s.dumps_rows,
           r.envelope_chars IS NOT NULL AS sized,
           -- json.dumps of the whole response: the rest, and the rows with ', ' between
           CAST(ceil((r.envelope_chars + r.envelope_extra + coalesce(s.dumps_rows, 0)
                      + 2 * greatest(coalesce(r.n, 0) - 1, 0)) / $chars_per_token) AS BIGINT)
               AS guard_tokens,
           coalesce(r.n, 0) > 0 AND s.k < r.n AS fired,
           s.gone_chars
    FROM results AS r
    JOIN sums AS s USING (app_name, user_id, session_id, ordinal)
), sized AS (
    SELECT *,
           CASE WHEN NOT sized THEN NULL
                WHEN fired THEN result_chars - gone_chars - ((n - 1) - greatest(k - 1, 0))
                    + length(',"total":,"truncated":true') + length(n::VARCHAR)
                ELSE result_chars END AS counterfactual_chars,
           -- the guard's estimate of what goes out, whole: the rest, the rows kept with
           -- ', ' between them, and the paging keys as json.dumps writes them
           CASE WHEN NOT sized THEN NULL
                WHEN NOT fired THEN guard_tokens
                ELSE CAST(ceil((envelope_chars + envelope_extra + kept_dumps
                                + 2 * greatest(k - 1, 0)
                                + length(', "total": , "truncated": true') + length(n::VARCHAR))
                               / $chars_per_token) AS BIGINT) END AS kept_guard_tokens
    FROM replayed
)
SELECT app_name, user_id, session_id, ordinal, function_call_id, tool_name, turn, agent,
       CASE WHEN NOT sized THEN 'unsized'
            WHEN rows_key IS NULL THEN 'dict'
            WHEN rows_key = '$' THEN 'list'
            ELSE 'rows in ' || rows_key END AS payload,
       n AS "rows",
       CASE WHEN sized THEN coalesce(k, 0) END AS rows_kept,
       CASE WHEN sized THEN fired END AS fired,
       CASE WHEN sized THEN $token_cap IS NOT NULL AND kept_guard_tokens > $token_cap END
           AS over_budget,
       guard_tokens, kept_guard_tokens, largest_row AS largest_row_guard_tokens,
       row_tokens AS row_guard_tokens, rows_over AS rows_over_budget,
       dumps_rows AS rows_dumps_chars, markdown_chars, result_chars, counterfactual_chars,
       result_chars - counterfactual_chars AS saved_chars,
       CAST(round_even(result_chars / fitted, 0) AS BIGINT) AS result_tokens_estimated,
       CAST(round_even(counterfactual_chars / fitted, 0) AS BIGINT) AS counterfactual_tokens,
       sends
FROM sized
ORDER BY app_name, user_id, session_id, ordinal;
