-- name: share
-- The bill of `cost_calls` split under each bound: cache reads, cache writes (a component only where the write rate differs from the input rate; in the bound that assumes every uncached token written), uncached input, output, the totals; the tool output's first sends (`cost_first_sends`); the calls of unknown price; the price sources.
-- params: (none)
WITH priced AS (
    SELECT *,
           cache_write_usd_per_mtok <> input_usd_per_mtok
               AND written_input_usd < uncached_input_usd AS low_writes,
           cache_write_usd_per_mtok <> input_usd_per_mtok
               AND NOT written_input_usd < uncached_input_usd AS high_writes
    FROM cost_calls
    WHERE cost_source <> 'unknown'
), sums AS (
    SELECT coalesce(sum(cache_read_usd), 0) AS reads,
           coalesce(sum(CASE WHEN low_writes THEN written_input_usd ELSE 0 END), 0)
               AS writes_low,
           coalesce(sum(CASE WHEN high_writes THEN written_input_usd ELSE 0 END), 0)
               AS writes_high,
           coalesce(sum(CASE WHEN low_writes THEN 0 ELSE uncached_input_usd END), 0)
               AS uncached_low,
           coalesce(sum(CASE WHEN high_writes THEN 0 ELSE uncached_input_usd END), 0)
               AS uncached_high,
           coalesce(sum(output_usd), 0) AS output_low,
           coalesce(sum(output_usd + output_unsure_usd), 0) AS output_high,
           coalesce(sum(cost_usd_low), 0) AS total_low,
           coalesce(sum(cost_usd_high), 0) AS total_high,
           count(*) FILTER (WHERE cost_source <> 'failed') AS billed_calls,
           CASE WHEN count(DISTINCT cost_source) = 1 THEN min(cost_source)
                WHEN count(*) > 0 THEN 'mixed' END AS cost_source,
           string_agg(DISTINCT price_source, '; ' ORDER BY price_source) AS price_source
    FROM priced
)
SELECT s.*,
       (SELECT coalesce(sum(first_low), 0) FROM cost_first_sends) AS tool_low,
       (SELECT coalesce(sum(first_high), 0) FROM cost_first_sends) AS tool_high,
       (SELECT count(*) FROM cost_calls WHERE cost_source = 'unknown') AS unknown_calls
FROM sums AS s;
