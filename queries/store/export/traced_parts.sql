-- name: traced_parts
-- The parts of the exported sessions' traced requests.
-- params: (none)
SELECT p.* FROM traced_parts AS p
WHERE p.session_id IN (SELECT session_id FROM export_keys)
ORDER BY p.session_id, p.event_id, p.content_index, p.part_index;
