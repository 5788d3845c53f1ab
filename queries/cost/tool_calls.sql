-- name: tool_calls
-- Per tool call (`cost_first_sends`; `ordinal` its order in the session): what sending its result cost in the calls that carried it (`cost_call_prices`; a failed request is not billed): the first send (the call after the result) at that call's input rate (high: its cache write rate), each later one at that call's own input price per token (cache reads and uncached input blended; high: uncached input at the write rate), in all, and every send in the turn that asked for it (as growth's resent_calls_in_turn counts them).
-- params: (none)
WITH carried AS (
    -- the calls that carried each result, priced, summed per result, carrying turn and
    -- price source
    -- (summed before results join in, so the join never pairs a session's calls with all
    -- of its results)
    SELECT k.app_name, k.user_id, k.session_id, k.function_call_id, p.invocation_id,
           p.price_source,
           count(*) AS sends,
           count(*) FILTER (WHERE p.cost_source = 'unknown') AS unpriced,
           sum(p.avg_low) AS low, sum(p.avg_high) AS high
    FROM fact_carried AS k
    JOIN cost_call_prices AS p
        ON p.app_name = k.app_name AND p.user_id = k.user_id AND p.session_id = k.session_id
       AND p.call_id = k.call_id
    GROUP BY ALL
), per_result AS (
    SELECT t.app_name, t.user_id, t.session_id, t.ordinal,
           sum(c.sends) AS sends, sum(c.unpriced) AS unpriced,
           coalesce(sum(c.sends) FILTER (WHERE c.invocation_id = t.invocation_id), 0)
               AS sends_in_turn,
           coalesce(sum(c.unpriced) FILTER (WHERE c.invocation_id = t.invocation_id), 0)
               AS unpriced_in_turn,
           sum(c.low) AS low, sum(c.high) AS high,
           sum(c.low) FILTER (WHERE c.invocation_id = t.invocation_id) AS low_in_turn,
           sum(c.high) FILTER (WHERE c.invocation_id = t.invocation_id) AS high_in_turn,
           string_agg(DISTINCT c.price_source, '; ' ORDER BY c.price_source) AS sources
    FROM cost_first_sends AS t
    JOIN carried AS c
        ON c.app_name = t.app_name AND c.user_id = t.user_id AND c.session_id = t.session_id
       AND c.function_call_id = t.function_call_id
    GROUP BY ALL
), blended AS (
    -- later sends: all carrying calls' blended prices less the first's; a figure with a
    -- send of no price is unknown (null), never a part passed off as the whole
    SELECT f.*, coalesce(s.sends, 0) AS sends, coalesce(s.unpriced, 0) AS unpriced_sends,
           coalesce(s.sends, 0) - (f.after_call_id IS NOT NULL)::BIGINT AS resends,
           coalesce(s.unpriced, 0) - (f.cost_source = 'unknown')::BIGINT AS resends_unpriced,
           s.sends_in_turn, s.unpriced_in_turn,
           f.tokens * (coalesce(s.low, 0) - f.first_avg_low) AS resend_low,
           f.tokens * (coalesce(s.high, 0) - f.first_avg_high) AS resend_high,
           f.tokens * (coalesce(s.low_in_turn, 0)
                       - CASE WHEN f.in_turn THEN f.first_avg_low ELSE 0 END) AS turn_low,
           f.tokens * (coalesce(s.high_in_turn, 0)
                       - CASE WHEN f.in_turn THEN f.first_avg_high ELSE 0 END) AS turn_high,
           s.sources AS price_source
    FROM cost_first_sends AS f
    LEFT JOIN per_result AS s USING (app_name, user_id, session_id, ordinal)
), known AS (
    SELECT *,
           CASE WHEN after_call_id IS NULL THEN CAST(0 AS DECIMAL(38, 18)) ELSE first_low END
               AS first_send_usd_low,
           CASE WHEN after_call_id IS NULL THEN CAST(0 AS DECIMAL(38, 18)) ELSE first_high END
               AS first_send_usd_high,
           resends_unpriced > 0 AS resends_unknown,
           unpriced_in_turn > 0 AS in_turn_unknown
    FROM blended
)
SELECT app_name, user_id, session_id, ordinal, function_call_id, tool_name, turn,
       tokens AS result_tokens_estimated, sends, first_send_usd_low, first_send_usd_high,
       -- estimated, in floating point: kept to 12 places
       CASE WHEN NOT resends_unknown THEN CAST(round(CAST(resend_low AS DECIMAL(38, 18)), 12)
           AS DECIMAL(38, 18)) END AS resend_usd_low,
       CASE WHEN NOT resends_unknown THEN CAST(round(CAST(resend_high AS DECIMAL(38, 18)), 12)
           AS DECIMAL(38, 18)) END AS resend_usd_high,
       CASE WHEN NOT in_turn_unknown THEN
           CASE WHEN in_turn THEN coalesce(first_send_usd_low, 0) ELSE 0 END
           + CAST(round(CAST(turn_low AS DECIMAL(38, 18)), 12) AS DECIMAL(38, 18)) END
           AS sent_in_turn_usd_low,
       CASE WHEN NOT in_turn_unknown THEN
           CASE WHEN in_turn THEN coalesce(first_send_usd_high, 0) ELSE 0 END
           + CAST(round(CAST(turn_high AS DECIMAL(38, 18)), 12) AS DECIMAL(38, 18)) END
           AS sent_in_turn_usd_high,
       unpriced_sends, price_source
FROM known
ORDER BY app_name, user_id, session_id, ordinal;
