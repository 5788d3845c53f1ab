-- name: ingests
-- The ingest ledger, newest first: what was read from where, loaded, skipped and why.
-- params: (none)
-- A run whose process was killed (or whose machine stopped) writes no ledger row but
-- keeps the batches it committed: each such run the stored events or logged records
-- name is listed too, as `unrecorded`, with what it stored.
WITH unrecorded AS (
    SELECT ingest_id, sum(n)::BIGINT AS stored
    FROM (
        SELECT ingest_id, count(*) AS n FROM events GROUP BY ingest_id
        UNION ALL
        SELECT ingest_id, count(*) AS n FROM logged GROUP BY ingest_id
    )
    WHERE ingest_id NOT IN (SELECT ingest_id FROM ingests)
    GROUP BY ingest_id
)
SELECT
    ingest_id, kind || ':' || location AS source, kind, filters, started_at, finished_at, status,
    rows_read, rows_loaded, rows_skipped,
    CASE WHEN status = 'ok' THEN rows_read - rows_loaded - rows_skipped END AS rows_already_stored,
    skip_reasons, watermark, error, notes
FROM ingests
UNION ALL
SELECT
    ingest_id, NULL, NULL, NULL, NULL, NULL, 'unrecorded',
    NULL, stored, NULL, NULL, NULL, NULL,
    'stopped with no ledger row (its process killed, or the machine stopped): the store '
        || 'holds ' || format('{:,}', stored) || ' records it committed; the same ingest run '
        || 'again loads what it did not',
    NULL
FROM unrecorded
ORDER BY ingest_id DESC;
