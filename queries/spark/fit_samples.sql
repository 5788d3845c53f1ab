-- name: fit_samples
-- (Spark SQL) The calls that fit each model's chars-per-token ratio, as queries/facts/fit_samples.sql picks them for one model: per model, the measured agent calls in the :limit sessions with the most measured calls of it, in model, session and call order.
-- params: :limit
WITH counted AS (
    SELECT coalesce(model_version, '') AS model, app_name, user_id, session_id,
           count(*) AS measured
    FROM events
    WHERE prompt_tokens IS NOT NULL AND NOT is_compaction
    GROUP BY 1, 2, 3, 4
), keys AS (
    SELECT *, row_number() OVER (PARTITION BY model
                                 ORDER BY measured DESC, app_name, user_id, session_id) AS rank
    FROM counted
)
SELECT k.model, c.app_name, coalesce(c.author, '') AS agent,
       c.chars_user + c.chars_model + c.chars_tool + c.chars_summary AS chars,
       c.system_tools_chars, c.prompt_tokens
FROM fact_calls AS c
JOIN keys AS k
    ON k.app_name = c.app_name AND k.user_id = c.user_id AND k.session_id = c.session_id
   AND k.model = c.model
WHERE k.rank <= :limit
  AND c.kind = 'agent' AND c.prompt_tokens IS NOT NULL AND c.prompt_tokens <> 0
ORDER BY k.model, k.rank, c.call_index
