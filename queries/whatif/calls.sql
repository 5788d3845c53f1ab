-- name: calls
-- Per model call of `cost_calls`: the characters a replayed guard (`whatif_results`) took out of its request, from every tool result it carried (a relayed result, quoted as another agent's text, in proportion to its relayed size), as tokens of the call's model (`scope_ratios`), and its blended input price per token (`cost_call_prices`).
-- params: (none)
WITH carried AS (
    SELECT k.app_name, k.user_id, k.session_id, k.call_id,
           count(*) FILTER (WHERE w.saved_chars > 0) AS results_cut,
           sum(CASE WHEN NOT k.relayed THEN w.saved_chars
                    WHEN p.chars > 0 THEN w.saved_chars * p.relay_chars / p.chars
                    ELSE 0 END) AS saved_chars
    FROM fact_carried AS k
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    JOIN whatif_results AS w
        ON w.app_name = k.app_name AND w.user_id = k.user_id AND w.session_id = k.session_id
       AND w.function_call_id = k.function_call_id
    LEFT JOIN parts AS p
        ON p.app_name = k.app_name AND p.user_id = k.user_id AND p.session_id = k.session_id
       AND p.function_call_id = k.function_call_id AND p.kind = 'function_response'
       AND p.origin = 'content'
    WHERE w.saved_chars IS NOT NULL
    GROUP BY ALL
)
, saved AS (
    -- a refused request without usage is not billed, whether or not its model has a price
    SELECT c.app_name, c.user_id, c.session_id, c.call_id, c.call_index, c.turn, c.agent,
           c.kind,
           CASE WHEN c.cost_source = 'failed' THEN 0 ELSE c.cost_usd_low END AS cost_usd_low,
           CASE WHEN c.cost_source = 'failed' THEN 0 ELSE c.cost_usd_high END AS cost_usd_high,
           c.output_usd_low, c.output_usd_high, c.request_usd, c.cost_source, p.avg_low,
           p.avg_high,
           coalesce(k.results_cut, 0) AS results_cut,
           CAST(coalesce(round_even(k.saved_chars / r.chars_per_token, 0), 0) AS BIGINT)
               AS saved_tokens
    FROM cost_calls AS c
    JOIN cost_call_prices AS p USING (app_name, user_id, session_id, call_id)
    JOIN fact_calls AS f USING (app_name, user_id, session_id, call_id)
    JOIN scope_ratios AS r ON r.model = f.model
    LEFT JOIN carried AS k USING (app_name, user_id, session_id, call_id)
)
-- the saving at the call's own blended input price, in floating point: kept to 12 places
-- (as tool_calls prices re-sends); unknown (null) where the call's price is
SELECT *,
       CAST(round(CAST(saved_tokens * avg_low AS DECIMAL(38, 18)), 12) AS DECIMAL(38, 18))
           AS saving_usd_low,
       CAST(round(CAST(saved_tokens * avg_high AS DECIMAL(38, 18)), 12) AS DECIMAL(38, 18))
           AS saving_usd_high
FROM saved
ORDER BY app_name, user_id, session_id, call_index;
