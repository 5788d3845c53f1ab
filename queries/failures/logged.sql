-- name: logged
-- Context failures among the logged records in [since, until) (optionally one session): each with its session, invocation and agent filled from the records of its trace (a tool span names no session; a log line names the span it was written in), and the completed model responses logged in its session before it (answered before it started; counted in one family of records, the one with the most, so a call logged both as a span and a LiteLLM payload counts once; null when the session has no logged calls).
-- params: $since, $until, $session
WITH filled AS (
    SELECT l.*,
           CASE WHEN l.trace_id IS NULL THEN l.session_id
                ELSE coalesce(l.session_id, max(l.session_id) OVER (PARTITION BY l.trace_id))
           END AS session_key,
           CASE WHEN l.trace_id IS NULL THEN l.invocation_id
                ELSE coalesce(l.invocation_id, max(l.invocation_id) OVER (PARTITION BY l.trace_id))
           END AS invocation_key
    FROM logged AS l
),
failures AS (
    SELECT f.*
    FROM filled AS f
    WHERE f.context_failure
      AND ($since IS NULL OR f.started_at >= $since)
      AND ($until IS NULL OR f.started_at < $until)
      AND ($session IS NULL OR f.session_key = $session)
),
responses AS (
    SELECT f.record_key, c.family, count(*) AS responses
    FROM failures AS f
    JOIN filled AS c
      ON c.session_key = f.session_key AND c.kind = 'call' AND c.status = 'ok'
     AND coalesce(c.ended_at, c.started_at) < f.started_at  -- answered before it
    GROUP BY f.record_key, c.family
),
logged_sessions AS (
    SELECT DISTINCT session_key FROM filled WHERE kind = 'call' AND session_key IS NOT NULL
)
SELECT f.record_key, f.family, f.locator, f.started_at, f.trace_id,
       f.session_key AS session_id, f.invocation_key AS invocation_id, f.event_id,
       coalesce(f.agent, s.agent) AS agent, coalesce(f.model, s.model) AS model,
       f.error_code, f.error_text, f.context_tokens, f.context_limit,
       CASE WHEN f.started_at IS NOT NULL
             AND f.session_key IN (SELECT session_key FROM logged_sessions)
            THEN coalesce((SELECT max(r.responses) FROM responses AS r
                           WHERE r.record_key = f.record_key), 0)
       END AS responses_before
FROM failures AS f
LEFT JOIN filled AS s  -- the span a log line was written in
  ON f.kind = 'log' AND s.kind <> 'log' AND s.trace_id = f.trace_id AND s.span_id = f.span_id
ORDER BY f.started_at, f.record_key;
