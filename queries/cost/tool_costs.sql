-- name: tool_costs
-- Per tool (app and tool name): its results in `cost_tool_call_rows` (the rows of cost/tool_calls.sql, or of the store's priced_tool_calls) and what sending them cost, summed in DuckDB; a money sum is unknown (null) when one of its values is (never a part as the whole), the price sources are each named once ('' for none). The costliest (high bound) first.
-- params: (none)
SELECT app_name, tool_name,
       count(*) AS results,
       sum(result_tokens_estimated) AS result_tokens_estimated,
       sum(sends) AS sends,
       CASE WHEN count(first_send_usd_low) = count(*) THEN sum(first_send_usd_low) END
           AS first_send_usd_low,
       CASE WHEN count(first_send_usd_high) = count(*) THEN sum(first_send_usd_high) END
           AS first_send_usd_high,
       CASE WHEN count(resend_usd_low) = count(*) THEN sum(resend_usd_low) END
           AS resend_usd_low,
       CASE WHEN count(resend_usd_high) = count(*) THEN sum(resend_usd_high) END
           AS resend_usd_high,
       CASE WHEN count(first_send_usd_low + resend_usd_low) = count(*)
            THEN sum(first_send_usd_low + resend_usd_low) END AS cost_usd_low,
       CASE WHEN count(first_send_usd_high + resend_usd_high) = count(*)
            THEN sum(first_send_usd_high + resend_usd_high) END AS cost_usd_high,
       sum(unpriced_sends) AS unpriced_sends,
       -- none named: '' (as polars joined an empty list before)
       coalesce(array_to_string(list_sort(list_distinct(flatten(
           list(string_split(price_source, '; ')) FILTER (WHERE price_source IS NOT NULL)))),
           '; '), '') AS price_source
FROM cost_tool_call_rows
GROUP BY ALL
ORDER BY cost_usd_high DESC NULLS LAST, app_name, tool_name;
