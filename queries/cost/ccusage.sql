-- name: ccusage
-- The Claude Code usage of the sessions in `scope_sessions` (in the time of `cost_window`), totalled by $by (day or session) as ccusage 20 totals it, to reconcile with it: every recorded usage (a failed request's too), one entry per message and request id across all sessions of a user (a user's transcripts are one ccusage run) (a main-thread copy before a sidechain one, then the larger token total, then by day the dearer, then the first read), the day of the entry's own line (UTC), the session its file's path names, cache creation as the 5-minute and 1-hour split where the line has one, and its cost at `ccusage_rates` (USD per token by model; `day` null: every day) under ccusage's rules: the line's own costUSD if it has one, else each field on its own with only its tokens above 200,000 at the above-200k rate, 1-hour writes at twice the input rate, a fast request times the model's fast multiplier (null: not known, the request unpriced), a model without a price at 0.
-- params: $by
WITH lines AS (
    SELECT t.app_name, t.user_id, t.session_id, t.event_id, t.file, t.line, t.message_id,
           t.request_id, t.model, t.speed, t.cost_usd,
           coalesce(t.is_sidechain, false) AS is_sidechain,
           DATE '1970-01-01' + CAST(floor(t.epoch / 86400) AS INTEGER) AS day, t.epoch,
           t.input_tokens AS n_input, t.output_tokens AS n_output,
           coalesce(t.cache_read_tokens, 0) AS n_read,
           -- with a split, ccusage counts the split (even when it disagrees with the total)
           CASE WHEN t.cache_write_5m_tokens IS NOT NULL THEN t.cache_write_5m_tokens
                ELSE coalesce(t.cache_creation_tokens, 0) END AS n_write_5m,
           coalesce(t.cache_write_1h_tokens, 0) AS n_write_1h,
           string_split(t.file, '/') AS parts
    FROM transcript_events AS t
    SEMI JOIN scope_sessions USING (app_name, user_id, session_id)
    WHERE t.input_tokens IS NOT NULL AND t.output_tokens IS NOT NULL
      AND t.epoch >= coalesce((SELECT since FROM cost_window), '-infinity'::DOUBLE)
      AND t.epoch < coalesce((SELECT until FROM cost_window), 'infinity'::DOUBLE)
), priced AS (
    SELECT l.*, r.price_key,
           n_input + n_output + n_read + n_write_5m + n_write_1h AS n_total,
           CASE WHEN l.speed = 'fast' THEN l.model || '-fast' ELSE l.model END AS label,
           (r.input IS NULL OR (l.speed = 'fast' AND r.fast IS NULL)) AND l.cost_usd IS NULL
               AND coalesce(l.model, '<synthetic>') <> '<synthetic>' AS unpriced,
           CASE WHEN l.cost_usd IS NOT NULL THEN CAST(l.cost_usd AS DECIMAL(38, 18))
                WHEN r.input IS NULL OR l.model = '<synthetic>'
                     OR (l.speed = 'fast' AND r.fast IS NULL) THEN CAST(0 AS DECIMAL(38, 18))
                ELSE (
                    CASE WHEN n_input > 200000 AND r.input_above IS NOT NULL
                         THEN 200000 * r.input + (n_input - 200000) * r.input_above
                         ELSE n_input * r.input END
                    + CASE WHEN n_output > 200000 AND r.output_above IS NOT NULL
                           THEN 200000 * r.output + (n_output - 200000) * r.output_above
                           ELSE n_output * r.output END
                    + CASE WHEN n_write_5m > 200000 AND r.cache_write_above IS NOT NULL
                           THEN 200000 * r.cache_write
                                + (n_write_5m - 200000) * r.cache_write_above
                           ELSE n_write_5m * r.cache_write END
                    + CASE WHEN n_write_1h > 200000 AND r.input_above IS NOT NULL
                           THEN 200000 * 2 * r.input + (n_write_1h - 200000) * 2 * r.input_above
                           ELSE n_write_1h * 2 * r.input END
                    + CASE WHEN n_read > 200000 AND r.cache_read_above IS NOT NULL
                           THEN 200000 * r.cache_read + (n_read - 200000) * r.cache_read_above
                           ELSE n_read * r.cache_read END
                ) * CASE WHEN l.speed = 'fast' THEN r.fast ELSE 1 END
           END AS cost_usd_entry
    FROM lines AS l
    LEFT JOIN ccusage_rates AS r ON r.model = l.model AND (r.day IS NULL OR r.day = l.day)
), kept AS (
    SELECT *,
           row_number() OVER (
               PARTITION BY user_id, CASE WHEN message_id IS NOT NULL AND request_id IS NOT NULL
                                 THEN message_id || chr(31) || request_id
                                 ELSE app_name || chr(31) || user_id || chr(31) || session_id
                                      || chr(31) || event_id END
               ORDER BY is_sidechain, n_total DESC,
                        CASE WHEN $by = 'day' THEN cost_usd_entry END DESC NULLS LAST,
                        file, line) AS copy
    FROM priced
), keyed AS (
    -- ccusage's session: from the file's path (paths.rs extract_session_parts)
    SELECT *,
           CASE WHEN len(parts) = 2 THEN regexp_replace(parts[2], '\.jsonl$', '')
                WHEN len(parts) >= 4 AND parts[len(parts) - 1] = 'subagents'
                    THEN parts[len(parts) - 2]
                ELSE parts[len(parts) - 1] END AS ccusage_session,
           CASE WHEN len(parts) = 2 THEN parts[1]
                WHEN len(parts) >= 4 AND parts[len(parts) - 1] = 'subagents'
                    THEN array_to_string(parts[1:len(parts) - 3], '/')
                WHEN len(parts) > 2 THEN array_to_string(parts[1:len(parts) - 2], '/')
                ELSE 'Unknown Project' END AS project_path
    FROM kept
    WHERE copy = 1
)
SELECT CASE WHEN $by = 'day' THEN day END AS day,
       CASE WHEN $by = 'session' THEN project_path END AS project_path,
       CASE WHEN $by = 'session' THEN ccusage_session END AS session_id,
       sum(n_input) AS input_tokens,
       sum(n_output) AS output_tokens,
       sum(n_write_5m + n_write_1h) AS cache_creation_tokens,
       sum(n_read) AS cache_read_tokens,
       sum(n_total) AS total_tokens,
       sum(cost_usd_entry) AS cost_usd,
       count(*) AS entries,
       count(*) FILTER (WHERE unpriced) AS unpriced_entries,
       string_agg(DISTINCT label, '; ' ORDER BY label)
           FILTER (WHERE label IS NOT NULL AND label <> '<synthetic>') AS models,
       string_agg(DISTINCT price_key, '; ' ORDER BY price_key) AS price_keys,
       min(epoch) AS first_activity,
       max(epoch) AS last_activity
FROM keyed
GROUP BY ALL
ORDER BY day, project_path, session_id;
