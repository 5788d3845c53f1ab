-- name: results
-- Per tool result in `result_fits` (result_rows.sql's, without the lists, and what forensics/whatif/fit.py found of its rows: k the rows kept, their json.dumps length, the largest row, the rows' tokens, those over the cap, all rows' length and the characters of the rows that go): a tool-output guard replayed on it (forensics/whatif/). Rows past min($page_size, $row_cap) go; then with $token_cap the token fit of the founding guard: the rest of the response and each row estimated as its json.dumps length over $chars_per_token (rounded up), rows kept while the running sum stays within the cap, and at least one row kept however large. A result without rows is sized whole and kept whole. What goes out is its actual characters less the rows that went (and their commas), plus the paging keys the guard adds ("total", "truncated"); tokens in the window are those characters over the fitted ratio of the session's main model, as growth sizes results. fits_unnested.sql is the definition of fit.py's figures, row by row.
-- params: $token_cap, $chars_per_token
WITH replayed AS (
    SELECT r.*,
           r.envelope_chars IS NOT NULL AS sized,
           -- json.dumps of the whole response: the rest, and the rows with ', ' between
           CAST(ceil((r.envelope_chars + r.envelope_extra + coalesce(r.dumps_rows, 0)
                      + 2 * greatest(coalesce(r.n, 0) - 1, 0)) / $chars_per_token) AS BIGINT)
               AS guard_tokens,
           coalesce(r.n, 0) > 0 AND r.k < r.n AS fired
    FROM result_fits AS r
), sized AS (
    SELECT *,
           CASE WHEN NOT sized THEN NULL
                -- (HUGEINT: the definition's sum of INTEGER row sizes is one)
                WHEN fired THEN result_chars - gone_chars::HUGEINT - ((n - 1) - greatest(k - 1, 0))
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
