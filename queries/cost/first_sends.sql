-- name: first_sends
-- Per tool call of the sessions in `scope_sessions`: its result's estimated tokens (chars over `scope_ratios`) and its first send, in the call after the result (`cost_call_prices`): at that call's input rate (high: its cache write rate), exactly; whether that call is in the turn that asked; a tool call is in `cost_calls`' time when the call that asked for it is.
-- params: (none)
WITH results AS (
    SELECT g.app_name, g.user_id, g.session_id, g.ordinal, g.function_call_id, g.tool_name,
           g.turn, g.invocation_id, g.after_call_id,
           CAST(round_even(g.result_chars / r.chars_per_token, 0) AS BIGINT) AS tokens
    FROM fact_tool_calls AS g
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    -- a tool call of the calls in `cost_calls`' time: the call that asked for it is there
    SEMI JOIN cost_calls AS w
        ON w.app_name = g.app_name AND w.user_id = g.user_id AND w.session_id = g.session_id
       AND w.call_id = g.source_call_id
    JOIN fact_sessions AS fs USING (app_name, user_id, session_id)
    JOIN scope_ratios AS r ON r.model = fs.main_model
)
SELECT t.*, p.cost_source, p.invocation_id = t.invocation_id AS in_turn,
       coalesce(p.avg_low, 0) AS first_avg_low, coalesce(p.avg_high, 0) AS first_avg_high,
       -- exact: a rate per MTok times 10^-6 (a rate has at most 12 decimal places)
       CAST(t.tokens * p.rate_low * CAST(0.000001 AS DECIMAL(18, 6)) AS DECIMAL(38, 18))
           AS first_low,
       CAST(t.tokens * p.rate_high * CAST(0.000001 AS DECIMAL(18, 6)) AS DECIMAL(38, 18))
           AS first_high
FROM results AS t
LEFT JOIN cost_call_prices AS p
    ON p.app_name = t.app_name AND p.user_id = t.user_id AND p.session_id = t.session_id
   AND p.call_id = t.after_call_id
