-- name: inferred_releases
-- The release ranges stored as inferred for the sessions in `release_keys_of` (an earlier ingest's, each from the events it read), to narrow with this ingest's.
-- params: (none)
SELECT r.app_name, r.user_id, r.session_id, r.version, r.detail, r.since_version,
       r.until_version
FROM session_releases AS r
SEMI JOIN release_keys_of USING (app_name, user_id, session_id)
WHERE r.basis = 'inferred';
