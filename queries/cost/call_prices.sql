-- name: call_prices
-- Per model call of `cost_calls`: its input price per token under each bound, blended (its cache reads, uncached input and writes over its input tokens, in floating point), and its dearer and cheaper rate for new input (the input and the write rate); a failed request, or a copy billed in another session, costs 0; an unknown price is null.
-- params: (none)
SELECT app_name, user_id, session_id, call_id, invocation_id, cost_source, price_source,
       CASE WHEN cost_source IN ('failed', 'copied') THEN 0.0
            WHEN cost_source <> 'unknown' AND input_tokens > 0
            THEN CAST(cache_read_usd_low + uncached_input_usd_low + cache_write_usd_low
                      AS DOUBLE) / input_tokens
            END AS avg_low,
       CASE WHEN cost_source IN ('failed', 'copied') THEN 0.0
            WHEN cost_source <> 'unknown' AND input_tokens + input_tokens_unsure > 0
            THEN CAST(cache_read_usd_high + uncached_input_usd_high + cache_write_usd_high
                      AS DOUBLE) / (input_tokens + input_tokens_unsure)
            END AS avg_high,
       CASE WHEN cost_source IN ('failed', 'copied') THEN 0
            ELSE least(input_usd_per_mtok, cache_write_usd_per_mtok) END AS rate_low,
       CASE WHEN cost_source IN ('failed', 'copied') THEN 0
            ELSE greatest(input_usd_per_mtok, cache_write_usd_per_mtok) END AS rate_high
FROM cost_calls
