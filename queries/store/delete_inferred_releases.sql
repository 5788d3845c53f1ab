-- name: delete_inferred_releases
-- Forget the inferred release of the sessions in `release_keys_of`: their events of two ingests allow no release in common (written by two releases: resumed, or migrated).
-- params: (none)
DELETE FROM session_releases
WHERE basis = 'inferred' AND (app_name, user_id, session_id) IN (
    SELECT (app_name, user_id, session_id) FROM release_keys_of);
