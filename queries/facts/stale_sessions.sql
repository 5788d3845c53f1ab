-- name: stale_sessions
-- The sessions whose stored facts are missing, built from other inputs, or by other rules, in key order: each with its events, its stamp (the counts and newest ingest of its events, of the traced requests that answered them, and of its release evidence) and whether it has facts now.
-- params: $rules_version, $every
WITH ev AS (
    SELECT app_name, user_id, session_id, count(*) AS n, max(ingest_id) AS i
    FROM events GROUP BY ALL
), tr AS (
    SELECT e.app_name, e.user_id, t.session_id, count(*) AS n, max(t.ingest_id) AS i
    FROM traced_calls AS t
    JOIN events AS e ON e.session_id = t.session_id AND e.event_id = t.event_id
    GROUP BY ALL
), rl AS (
    SELECT app_name, user_id, session_id, count(*) AS n, max(ingest_id) AS i
    FROM session_releases GROUP BY ALL
), stamps AS (
    SELECT ev.app_name, ev.user_id, ev.session_id, ev.n AS events,
           concat_ws(':', ev.n, ev.i, coalesce(tr.n, 0), coalesce(tr.i, 0),
                     coalesce(rl.n, 0), coalesce(rl.i, 0)) AS stamp
    FROM ev
    LEFT JOIN tr USING (app_name, user_id, session_id)
    LEFT JOIN rl USING (app_name, user_id, session_id)
)
SELECT s.app_name, s.user_id, s.session_id, s.events, s.stamp, f.rules IS NOT NULL AS built
FROM stamps AS s
LEFT JOIN fact_sessions AS f USING (app_name, user_id, session_id)
WHERE $every OR f.stamp IS NULL OR f.stamp <> s.stamp OR NOT starts_with(f.rules, $rules_version || ' ')
ORDER BY s.app_name, s.user_id, s.session_id;
