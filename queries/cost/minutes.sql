-- name: minutes
-- The calls of `cost_calls` summed by the minute they started in ($seconds: the bucket's length in seconds, 60 unless a time zone of the period has an offset of odd seconds) and by agent: how many, how many have no price, and the known bounds. The weekly review's days in its time zone come from these (a bucket never straddles a local midnight, and sums of Decimals are exact however grouped), without a row per call: every call of a week at 1,000,000 events was 500 MB of frame.
-- params: $seconds
-- (the start in whole microseconds first, as a frame's datetime holds it: provenance.Spec)
SELECT CAST(floor(trunc(started_at * 1000000) / (1000000.0 * $seconds)) AS BIGINT) * $seconds
           AS bucket,
       agent,
       count(*) AS calls,
       count(*) FILTER (WHERE cost_source = 'unknown') AS unpriced,
       sum(cost_usd_low) AS cost_usd_low, sum(cost_usd_high) AS cost_usd_high
FROM cost_calls
GROUP BY ALL
ORDER BY bucket NULLS LAST, agent NULLS FIRST;
