-- name: fits_unnested
-- Per result of `result_rows` (result_rows.sql's rows, registered): what a tool-output guard keeps of its rows, a row per result row. Rows past min($page_size, $row_cap) go; then with $token_cap the token fit of the founding guard: the rest of the response and each row estimated as its json.dumps length over $chars_per_token (rounded up), rows kept while the running sum stays within the cap, and at least one row kept however large. k: the rows kept; kept_dumps: their json.dumps length; gone_chars: the characters of the rows that go; dumps_rows: all rows' length; largest_row, row_tokens: the rows' tokens, the largest and the sum; rows_over: rows over the cap alone. This is the definition of forensics/whatif/fit.py, which finds the same from the lists without unnesting them (at 1,000,000 events this statement unnests 34 million rows: 48 s and 15 GB); run by the tests, which hold the two equal.
-- params: $row_cap, $token_cap, $page_size, $chars_per_token
WITH results AS (
    SELECT * FROM result_rows
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
)
SELECT r.* EXCLUDE (row_chars, row_extra),
       s.k, s.kept_dumps, s.gone_chars, s.dumps_rows, s.largest_row, s.row_tokens,
       s.rows_over
FROM results AS r
JOIN sums AS s USING (app_name, user_id, session_id, ordinal)
ORDER BY app_name, user_id, session_id, ordinal;
