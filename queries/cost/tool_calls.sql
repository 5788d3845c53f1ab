-- name: tool_calls
-- Per tool call of the sessions in `scope_sessions`: its result's estimated tokens (chars over `scope_ratios`) and what sending it cost in the calls that carried it (`cost_calls`; a failed request is not billed): the first send (the earliest call) at that call's input rate (high: its cache write rate), each later one at that call's own input price per token (cache reads and uncached input blended; high: uncached input at the write rate), in all, and every send in the turn that asked for it (as growth's resent_calls_in_turn counts them).
-- params: (none)
WITH results AS (
    SELECT g.app_name, g.user_id, g.session_id, g.ordinal, g.function_call_id, g.tool_name,
           g.turn, g.invocation_id,
           CAST(round_even(g.result_chars / r.chars_per_token, 0) AS BIGINT) AS tokens
    FROM fact_tool_calls AS g
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
    JOIN scope_ratios AS r ON r.model = fs.main_model
), sends AS (
    SELECT t.app_name, t.user_id, t.session_id, t.ordinal, t.tokens,
           row_number() OVER (PARTITION BY t.app_name, t.user_id, t.session_id, t.ordinal
                              ORDER BY c.call_index) = 1 AS first_send,
           c.invocation_id = t.invocation_id AS in_turn,
           c.cost_source, c.price_source,
           -- a failed request is not billed; an unknown price has no amount
           CASE WHEN c.cost_source NOT IN ('failed', 'unknown') THEN c.input_tokens END
               AS input_tokens,
           CASE WHEN c.cost_source <> 'failed' THEN c.input_usd_per_mtok END
               AS input_usd_per_mtok,
           CASE WHEN c.cost_source <> 'failed' THEN c.cache_write_usd_per_mtok END
               AS cache_write_usd_per_mtok,
           c.cache_read_usd, c.uncached_input_usd, c.written_input_usd
    FROM results AS t
    JOIN fact_carried AS k
        ON k.app_name = t.app_name AND k.user_id = t.user_id AND k.session_id = t.session_id
       AND k.function_call_id = t.function_call_id
    JOIN cost_calls AS c
        ON c.app_name = k.app_name AND c.user_id = k.user_id AND c.session_id = k.session_id
       AND c.call_id = k.call_id
), priced AS (
    SELECT *,
           -- exact: a rate per MTok times 10^-6 (a rate has at most 12 decimal places)
           CASE WHEN first_send
                THEN tokens * input_usd_per_mtok * CAST(0.000001 AS DECIMAL(18, 6)) END
               AS first_low,
           CASE WHEN first_send
                THEN tokens * cache_write_usd_per_mtok * CAST(0.000001 AS DECIMAL(18, 6)) END
               AS first_high,
           -- estimated: the call's input price per token, blended (floating point, 12 places)
           CASE WHEN NOT first_send AND input_tokens > 0 THEN CAST(round(
               tokens * (cache_read_usd + uncached_input_usd) / input_tokens, 12)
               AS DECIMAL(38, 18)) END AS resend_low,
           CASE WHEN NOT first_send AND input_tokens > 0 THEN CAST(round(
               tokens * (cache_read_usd + written_input_usd) / input_tokens, 12)
               AS DECIMAL(38, 18)) END AS resend_high
    FROM sends
), per_call AS (
    SELECT app_name, user_id, session_id, ordinal,
           count(*) AS sends,
           count(*) FILTER (WHERE cost_source = 'unknown') AS unpriced_sends,
           CAST(coalesce(sum(first_low), 0) AS DECIMAL(38, 18)) AS first_send_usd_low,
           CAST(coalesce(sum(first_high), 0) AS DECIMAL(38, 18)) AS first_send_usd_high,
           coalesce(sum(resend_low), 0) AS resend_usd_low,
           coalesce(sum(resend_high), 0) AS resend_usd_high,
           -- every send in the turn that asked (the first included), as growth counts them
           coalesce(sum(coalesce(first_low, resend_low)) FILTER (WHERE in_turn), 0)
               AS sent_in_turn_usd_low,
           coalesce(sum(coalesce(first_high, resend_high)) FILTER (WHERE in_turn), 0)
               AS sent_in_turn_usd_high,
           string_agg(DISTINCT price_source, '; ' ORDER BY price_source) AS price_source
    FROM priced
    GROUP BY ALL
)
SELECT t.app_name, t.user_id, t.session_id, t.function_call_id, t.tool_name, t.turn,
       t.tokens AS result_tokens_estimated,
       coalesce(s.sends, 0) AS sends,
       coalesce(s.first_send_usd_low, 0) AS first_send_usd_low,
       coalesce(s.first_send_usd_high, 0) AS first_send_usd_high,
       coalesce(s.resend_usd_low, 0) AS resend_usd_low,
       coalesce(s.resend_usd_high, 0) AS resend_usd_high,
       CAST(coalesce(s.sent_in_turn_usd_low, 0) AS DECIMAL(38, 18)) AS sent_in_turn_usd_low,
       CAST(coalesce(s.sent_in_turn_usd_high, 0) AS DECIMAL(38, 18)) AS sent_in_turn_usd_high,
       coalesce(s.unpriced_sends, 0) AS unpriced_sends,
       s.price_source
FROM results AS t
LEFT JOIN per_call AS s USING (app_name, user_id, session_id, ordinal)
ORDER BY t.app_name, t.user_id, t.session_id, t.ordinal;
