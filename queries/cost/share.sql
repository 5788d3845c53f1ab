-- name: share
-- The bill of `cost_calls` split under each bound into the parts that add up to it (cache reads, cache writes, uncached input, output, request fees) and the totals; the tool output's first sends (`cost_first_sends`); the calls of unknown price; how the calls are known and the price sources.
-- params: (none)
WITH sums AS (
    SELECT coalesce(sum(cache_read_usd_low), 0) AS reads_low,
           coalesce(sum(cache_read_usd_high), 0) AS reads_high,
           coalesce(sum(cache_write_usd_low), 0) AS writes_low,
           coalesce(sum(cache_write_usd_high), 0) AS writes_high,
           coalesce(sum(uncached_input_usd_low), 0) AS uncached_low,
           coalesce(sum(uncached_input_usd_high), 0) AS uncached_high,
           coalesce(sum(output_usd_low), 0) AS output_low,
           coalesce(sum(output_usd_high), 0) AS output_high,
           coalesce(sum(request_usd), 0) AS requests_low,
           coalesce(sum(request_usd), 0) AS requests_high,
           coalesce(sum(cost_usd_low), 0) AS total_low,
           coalesce(sum(cost_usd_high), 0) AS total_high,
           count(*) FILTER (WHERE cost_source <> 'failed') AS billed_calls,
           CASE WHEN count(DISTINCT cost_source) = 1 THEN min(cost_source)
                WHEN count(*) > 0 THEN 'mixed' END AS cost_source,
           string_agg(DISTINCT price_source, '; ' ORDER BY price_source) AS price_source
    FROM cost_calls
    WHERE cost_source <> 'unknown'
)
SELECT s.*,
       (SELECT coalesce(sum(first_low), 0) FROM cost_first_sends) AS tool_low,
       (SELECT coalesce(sum(first_high), 0) FROM cost_first_sends) AS tool_high,
       (SELECT count(*) FROM cost_calls WHERE cost_source = 'unknown') AS unknown_calls
FROM sums AS s;
