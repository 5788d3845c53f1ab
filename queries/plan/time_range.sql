-- name: time_range
-- Plan check: count events in a time range with no session key (the founding 30-day count).
-- params: $since, $until
SELECT count(*)
FROM events
WHERE "timestamp" >= $since AND "timestamp" < $until
