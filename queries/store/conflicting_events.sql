-- name: conflicting_events
-- Events in `new_events` whose key is stored already with other content (the first stored is kept), by key.
-- params: (none)
SELECT n.app_name, n.user_id, n.session_id, n.event_id
FROM new_events AS n
JOIN events AS e USING (app_name, user_id, session_id, event_id)
WHERE e.epoch IS DISTINCT FROM n.epoch
   OR e.chars IS DISTINCT FROM n.chars
   OR e.part_count IS DISTINCT FROM n.part_count
   OR e.author IS DISTINCT FROM n.author
   OR e.invocation_id IS DISTINCT FROM n.invocation_id;
