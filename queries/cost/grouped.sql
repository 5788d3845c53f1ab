-- name: grouped
-- The model calls of `cost_calls` (queries/cost/calls.sql) summed by $by (session, day, agent, model, turn, app): the key columns of that grouping (the others null), usage, the cost's bounds (empty when no call of the group could be priced), and how many calls are known how.
-- params: $by
SELECT CASE WHEN $by IN ('session', 'agent', 'app', 'turn') THEN app_name END AS app_name,
       CASE WHEN $by IN ('session', 'turn') THEN user_id END AS user_id,
       CASE WHEN $by IN ('session', 'turn') THEN session_id END AS session_id,
       CASE WHEN $by = 'turn' THEN turn END AS turn,
       CASE WHEN $by = 'turn' THEN invocation_id END AS invocation_id,
       CASE WHEN $by = 'day' THEN day END AS day,
       CASE WHEN $by = 'agent' THEN agent END AS agent,
       CASE WHEN $by = 'model' THEN model END AS model,
       CASE WHEN $by = 'model' THEN provider END AS provider,
       CASE WHEN $by = 'model' THEN price_model END AS price_model,
       count(*) AS calls,
       sum(input_tokens) AS input_tokens,
       sum(cache_read_tokens) AS cache_read_tokens,
       -- known only where every call's writes are
       CASE WHEN count(cache_write_tokens) = count(*) THEN sum(cache_write_tokens) END
           AS cache_write_tokens,
       sum(output_tokens) AS output_tokens,
       CASE WHEN bool_or(cost_source IN ('priced', 'range', 'inferred', 'estimated'))
                 OR NOT bool_or(cost_source = 'unknown')
            THEN coalesce(sum(cost_usd_low), 0) END AS cost_usd_low,
       CASE WHEN bool_or(cost_source IN ('priced', 'range', 'inferred', 'estimated'))
                 OR NOT bool_or(cost_source = 'unknown')
            THEN coalesce(sum(cost_usd_high), 0) END AS cost_usd_high,
       CASE WHEN count(DISTINCT cost_source) = 1 THEN min(cost_source) ELSE 'mixed' END
           AS cost_source,
       count(*) FILTER (WHERE cost_source = 'priced') AS priced_calls,
       count(*) FILTER (WHERE cost_source = 'range') AS range_calls,
       count(*) FILTER (WHERE cost_source = 'inferred') AS inferred_calls,
       count(*) FILTER (WHERE cost_source = 'estimated') AS estimated_calls,
       count(*) FILTER (WHERE cost_source = 'failed') AS failed_calls,
       count(*) FILTER (WHERE cost_source = 'unknown') AS unknown_calls,
       count(*) FILTER (WHERE cost_source = 'copied') AS copied_calls,
       string_agg(DISTINCT price_source, '; ' ORDER BY price_source) AS price_source
FROM cost_calls
GROUP BY ALL
ORDER BY session_id, turn, invocation_id, day, app_name, user_id, agent, model, provider,
         price_model;
