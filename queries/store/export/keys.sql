-- name: keys
-- The sessions an export holds, as temp table export_keys: the selected ones (with since/until: those with an event in [since, until)).
-- params: $app, $user, $session, $since, $until
CREATE OR REPLACE TEMP TABLE export_keys AS
SELECT DISTINCT app_name, user_id, session_id
FROM events
WHERE ($app IS NULL OR app_name = $app)
  AND ($user IS NULL OR user_id = $user)
  AND ($session IS NULL OR session_id = $session)
  AND ($since IS NULL OR epoch >= $since)
  AND ($until IS NULL OR epoch < $until);
