-- name: scope_sessions
-- The selected sessions that have facts (app, user, session, the family that wrote them; with since/until: sessions with an event in [since, until)), in key order, numbered; a session whose facts could not be built (its error stored) is none of them.
-- params: $app, $user, $session, $since, $until, $family
SELECT f.app_name, f.user_id, f.session_id, f.main_model, f.rules,
       row_number() OVER (ORDER BY f.app_name, f.user_id, f.session_id) AS ordinal
FROM fact_sessions AS f
WHERE f.error IS NULL
  AND ($app IS NULL OR f.app_name = $app)
  AND ($user IS NULL OR f.user_id = $user)
  AND ($session IS NULL OR f.session_id = $session)
  AND ($family IS NULL OR EXISTS (
        SELECT 1 FROM sessions AS s
        WHERE s.app_name = f.app_name AND s.user_id = f.user_id AND s.session_id = f.session_id
          AND s.family = $family))
  -- an IN over events, not a correlated EXISTS: without a time, the filter on the scan
  -- leaves it no rows to read (the EXISTS read every event: 0.07 s and 140 MB of every
  -- command at 1,000,000 events)
  AND (($since IS NULL AND $until IS NULL) OR (f.app_name, f.user_id, f.session_id) IN (
        SELECT (t.app_name, t.user_id, t.session_id) FROM events AS t
        WHERE ($since IS NOT NULL OR $until IS NOT NULL)
          AND ($since IS NULL OR t.epoch >= $since) AND ($until IS NULL OR t.epoch < $until)))
ORDER BY ordinal;
