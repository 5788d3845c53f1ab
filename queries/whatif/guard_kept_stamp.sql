-- name: guard_kept_stamp
-- What the guards audit's kept figures (`guard_kept`, forensics/whatif/kept.py) were computed from, as one row: the events (count, newest ingest), the tool results' parts (count, and sums over their sizes: a part sized again changes them), the facts that pick each tool call's result (counts, rules).
-- params: (none)
SELECT (SELECT [count(*), max(ingest_id)] FROM events) AS events,
       (SELECT [count(*), count(rows_key), sum(envelope_chars), sum(envelope_extra),
                sum(markdown_chars), sum(len(row_chars)), sum(list_sum(row_chars))]
        FROM parts WHERE kind = 'function_response' AND origin = 'content') AS results,
       (SELECT [count(*)] FROM fact_tool_calls) AS tool_calls,
       (SELECT count(*) FROM fact_sessions) AS sessions,
       (SELECT value FROM store_meta WHERE key = 'facts_rules') AS rules;
