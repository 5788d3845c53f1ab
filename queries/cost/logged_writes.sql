-- name: logged_writes
-- Per model call of the sessions in `scope_sessions`, the logged record (matched among all of the store's calls) of the same request that counted its cache writes (ADK stores none): a LiteLLM payload or a span (ADK 2.13's `gen_ai.usage.cache_creation.input_tokens`), matched by session and event id (`id`: the ids ADK puts on its spans, or an app in a payload's metadata), else by model, start within 5 s and prompt tokens within 1% (`near`, each record to its nearest call and each call to its nearest record; a span before a payload at equal distance).
-- params: (none)
WITH calls AS (
    SELECT c.app_name, c.user_id, c.session_id, c.call_id, c.epoch,
           coalesce(c.model_version, c.model) AS model, c.prompt_tokens
    FROM fact_calls AS c
    -- every call of the store, whatever the selection: a record goes to its nearest
    -- call, and which call that is must not depend on which sessions are selected
    WHERE c.prompt_tokens IS NOT NULL
), payloads AS (
    SELECT record_key, family, session_id, event_id, started_at, model, input_tokens,
           cache_write_tokens
    FROM logged
    WHERE family IN ('litellm', 'otel-span') AND kind = 'call'
      AND coalesce(status, 'ok') = 'ok' AND cache_write_tokens IS NOT NULL
), by_id AS (
    SELECT c.app_name, c.user_id, c.session_id, c.call_id, p.record_key,
           p.family || ' (id)' AS logged_match, p.cache_write_tokens,
           row_number() OVER (PARTITION BY c.app_name, c.user_id, c.session_id, c.call_id
                              ORDER BY p.family DESC, p.record_key) AS by_call
    FROM calls AS c
    JOIN payloads AS p ON p.session_id = c.session_id AND p.event_id = c.call_id
), near AS (
    SELECT c.app_name, c.user_id, c.session_id, c.call_id, p.record_key,
           p.family || ' (near)' AS logged_match, p.cache_write_tokens,
           row_number() OVER (PARTITION BY c.app_name, c.user_id, c.session_id, c.call_id
                              ORDER BY abs(p.started_at - c.epoch), p.family DESC,
                                       p.record_key) AS by_call,
           row_number() OVER (PARTITION BY p.record_key
                              ORDER BY abs(p.started_at - c.epoch), c.session_id, c.call_id)
               AS by_payload
    FROM calls AS c
    JOIN payloads AS p
      ON (p.session_id IS NULL OR p.session_id = c.session_id)
     AND abs(p.started_at - c.epoch) <= 5
     AND (p.model = c.model OR p.model LIKE '%/' || c.model)
     AND abs(p.input_tokens - c.prompt_tokens) <= 0.01 * c.prompt_tokens
    WHERE p.record_key NOT IN (SELECT record_key FROM by_id)
      AND NOT EXISTS (SELECT 1 FROM by_id AS b
                      WHERE b.app_name = c.app_name AND b.user_id = c.user_id
                        AND b.session_id = c.session_id AND b.call_id = c.call_id)
)
SELECT app_name, user_id, session_id, call_id, record_key, logged_match, cache_write_tokens
FROM (
    SELECT app_name, user_id, session_id, call_id, record_key, logged_match,
           cache_write_tokens
    FROM by_id
    WHERE by_call = 1
    UNION ALL
    SELECT app_name, user_id, session_id, call_id, record_key, logged_match,
           cache_write_tokens
    FROM near
    WHERE by_call = 1 AND by_payload = 1
)
SEMI JOIN scope_sessions AS o USING (app_name, user_id, session_id);
