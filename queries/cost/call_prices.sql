-- name: call_prices
-- Per model call of `cost_calls`: its input price per token, blended (cache reads and uncached input over its input tokens, in floating point; high: uncached input at the write rate), and its input and write rates; a failed request costs 0, an unknown price is null.
-- params: (none)
SELECT app_name, user_id, session_id, call_id, invocation_id, cost_source, price_source,
       CASE WHEN cost_source = 'failed' THEN 0.0
            WHEN cost_source <> 'unknown' AND input_tokens > 0
            THEN CAST((cache_read_usd + uncached_input_usd) AS DOUBLE) / input_tokens
            END AS avg_low,
       CASE WHEN cost_source = 'failed' THEN 0.0
            WHEN cost_source <> 'unknown' AND input_tokens > 0
            THEN CAST((cache_read_usd + written_input_usd) AS DOUBLE) / input_tokens
            END AS avg_high,
       CASE WHEN cost_source = 'failed' THEN 0 ELSE input_usd_per_mtok END AS rate_low,
       CASE WHEN cost_source = 'failed' THEN 0 ELSE cache_write_usd_per_mtok END
           AS rate_high
FROM cost_calls
