-- name: fit_samples
-- The calls that fit one model's chars-per-token ratio: the measured agent calls of that model in the $limit sessions with the most measured calls of it (most first), in session and call order.
-- params: $model, $limit
WITH keys AS (
    SELECT app_name, user_id, session_id,
           row_number() OVER (ORDER BY count(*) DESC, app_name, user_id, session_id) AS rank
    FROM events
    WHERE coalesce(model_version, '') = $model
      AND prompt_tokens IS NOT NULL AND NOT is_compaction
    GROUP BY app_name, user_id, session_id
    ORDER BY rank
    LIMIT $limit
)
SELECT c.app_name, coalesce(c.author, '') AS agent,
       c.chars_user + c.chars_model + c.chars_tool + c.chars_summary AS chars,
       c.system_tools_chars, c.prompt_tokens
FROM fact_calls AS c
JOIN keys USING (app_name, user_id, session_id)
WHERE c.kind = 'agent' AND c.prompt_tokens IS NOT NULL AND c.prompt_tokens <> 0
  AND c.model = $model
ORDER BY keys.rank, c.call_index;
