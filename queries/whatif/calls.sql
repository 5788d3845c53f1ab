-- name: calls
-- Per model call of `cost_calls`: the characters a replayed guard (`whatif_results`) took out of its request, from every tool result it carried (a relayed result, quoted as another agent's text, in proportion to its relayed size), as tokens of the call's model (`scope_ratios`), and its blended input price per token (`cost_call_prices`). Placed in the transcript ($placement), a result goes out whole at its first send and cut from its second, and the call of its second send re-sends its request from that result on: the reads it made beyond where the result begins (the window of the call that asked for it), less what the cut took out of them, are written or sent uncached instead (`invalidated_tokens`, priced at the call's rates).
-- params: $placement
WITH sends AS (
    -- each carried result, with which of its sends this call is (1: its first; counted
    -- only where the placement needs it: the default never pays for the window)
    SELECT k.app_name, k.user_id, k.session_id, k.call_id, k.function_call_id, k.relayed,
           0 AS send
    FROM fact_carried AS k
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    WHERE $placement = 'boundary'
    UNION ALL
    SELECT k.app_name, k.user_id, k.session_id, k.call_id, k.function_call_id, k.relayed,
           row_number() OVER (PARTITION BY k.app_name, k.user_id, k.session_id,
                                           k.function_call_id ORDER BY f.call_index) AS send
    FROM fact_carried AS k
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    JOIN fact_calls AS f USING (app_name, user_id, session_id, call_id)
    WHERE $placement <> 'boundary'
), positions AS (
    -- where a result begins in a request: the window of the call that asked for it
    SELECT t.app_name, t.user_id, t.session_id, t.function_call_id,
           coalesce(f.prompt_tokens, CAST(round_even(
               (f.chars_user + f.chars_model + f.chars_tool + f.chars_summary)
               / r.chars_per_token, 0) AS BIGINT)) AS position
    FROM fact_tool_calls AS t
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    JOIN fact_calls AS f
        ON f.app_name = t.app_name AND f.user_id = t.user_id AND f.session_id = t.session_id
       AND f.call_id = t.source_call_id
    JOIN scope_ratios AS r ON r.model = f.model
    WHERE $placement <> 'boundary'
), carried_results AS (
    SELECT k.app_name, k.user_id, k.session_id, k.call_id, k.send, w.saved_chars, o.position,
           CASE WHEN $placement <> 'boundary' AND k.send = 1 THEN 0
                WHEN NOT k.relayed THEN w.saved_chars
                WHEN p.chars > 0 THEN w.saved_chars * p.relay_chars / p.chars
                ELSE 0 END AS taken_chars,
           -- the earliest result rewritten at this call (its second send)
           min(o.position) FILTER (WHERE k.send = 2 AND w.saved_chars > 0)
               OVER (PARTITION BY k.app_name, k.user_id, k.session_id, k.call_id)
               AS rewritten_from
    FROM sends AS k
    JOIN whatif_results AS w
        ON w.app_name = k.app_name AND w.user_id = k.user_id AND w.session_id = k.session_id
       AND w.function_call_id = k.function_call_id
    LEFT JOIN parts AS p
        ON p.app_name = k.app_name AND p.user_id = k.user_id AND p.session_id = k.session_id
       AND p.function_call_id = k.function_call_id AND p.kind = 'function_response'
       AND p.origin = 'content'
    LEFT JOIN positions AS o
        ON o.app_name = k.app_name AND o.user_id = k.user_id AND o.session_id = k.session_id
       AND o.function_call_id = k.function_call_id
    WHERE w.saved_chars IS NOT NULL
), carried AS (
    SELECT app_name, user_id, session_id, call_id,
           count(*) FILTER (WHERE saved_chars > 0
                            AND ($placement = 'boundary' OR send > 1)) AS results_cut,
           sum(taken_chars) AS saved_chars,
           min(rewritten_from) AS rewritten_from,
           -- what the cut took out beyond that point: not sent, so not re-sent either
           sum(taken_chars) FILTER (WHERE position >= rewritten_from) AS taken_after_chars
    FROM carried_results
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
               AS saved_tokens,
           -- the reads beyond the rewritten result's start, less what the cut took out
           -- of them (the counterfactual request sends those tokens no more)
           coalesce(greatest(c.cache_read_tokens - k.rewritten_from - CAST(coalesce(
               round_even(k.taken_after_chars / r.chars_per_token, 0), 0) AS BIGINT), 0), 0)
               AS invalidated_tokens,
           -- the rates those tokens are paid at instead of the read rate: where the call's
           -- writes are known and it wrote, the write rate of their lifetime (both: the
           -- cheaper and the dearer), else the cheaper and the dearer of the input and
           -- write rates (per token, exactly)
           CAST(c.cache_read_usd_per_mtok * 0.000001 AS DECIMAL(38, 18)) AS rate_read,
           CAST(CASE WHEN c.cache_write_tokens > 0 AND c.cache_write_1h_tokens = c.cache_write_tokens
                         THEN coalesce(c.cache_write_1h_usd_per_mtok, c.cache_write_usd_per_mtok)
                     WHEN c.cache_write_tokens > 0 THEN c.cache_write_usd_per_mtok
                     ELSE least(c.input_usd_per_mtok,
                                coalesce(c.cache_write_usd_per_mtok, c.input_usd_per_mtok))
                END * 0.000001 AS DECIMAL(38, 18)) AS rate_resent_low,
           CAST(CASE WHEN c.cache_write_tokens > 0 AND c.cache_write_1h_tokens > 0
                         THEN coalesce(c.cache_write_1h_usd_per_mtok, c.cache_write_usd_per_mtok)
                     WHEN c.cache_write_tokens > 0 THEN c.cache_write_usd_per_mtok
                     ELSE greatest(c.input_usd_per_mtok,
                                   coalesce(c.cache_write_usd_per_mtok, c.input_usd_per_mtok))
                END * 0.000001 AS DECIMAL(38, 18)) AS rate_resent_high
    FROM cost_calls AS c
    JOIN cost_call_prices AS p USING (app_name, user_id, session_id, call_id)
    JOIN fact_calls AS f USING (app_name, user_id, session_id, call_id)
    JOIN scope_ratios AS r ON r.model = f.model
    LEFT JOIN carried AS k USING (app_name, user_id, session_id, call_id)
)
-- the saving at the call's own blended input price, in floating point: kept to 12 places
-- (as tool_calls prices re-sends); unknown (null) where the call's price is
SELECT * EXCLUDE (rate_read, rate_resent_low, rate_resent_high),
       CAST(round(CAST(saved_tokens * avg_low AS DECIMAL(38, 18)), 12) AS DECIMAL(38, 18))
           AS saving_usd_low,
       CAST(round(CAST(saved_tokens * avg_high AS DECIMAL(38, 18)), 12) AS DECIMAL(38, 18))
           AS saving_usd_high,
       CASE WHEN invalidated_tokens = 0 OR cost_source = 'failed' THEN CAST(0 AS DECIMAL(38, 18))
            ELSE invalidated_tokens * (rate_resent_low - rate_read) END AS invalidation_usd_low,
       CASE WHEN invalidated_tokens = 0 OR cost_source = 'failed' THEN CAST(0 AS DECIMAL(38, 18))
            ELSE invalidated_tokens * (rate_resent_high - rate_read) END AS invalidation_usd_high
FROM saved
ORDER BY app_name, user_id, session_id, call_index;
