-- name: session_release_evidence
-- Every piece of evidence for the selected sessions' google-adk releases, given or inferred at ingest.
-- params: $app, $user, $session
SELECT app_name, user_id, session_id, basis, version, since_version, until_version, detail
FROM session_releases
WHERE ($app IS NULL OR app_name = $app) AND ($user IS NULL OR user_id = $user)
  AND ($session IS NULL OR session_id = $session);
