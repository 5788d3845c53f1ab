-- name: ingests
-- The ingest ledger, newest first: what was read from where, loaded, skipped and why.
-- params: (none)
SELECT
    ingest_id, kind || ':' || location AS source, kind, filters, started_at, finished_at, status,
    rows_read, rows_loaded, rows_skipped,
    CASE WHEN status = 'ok' THEN rows_read - rows_loaded - rows_skipped END AS rows_already_stored,
    skip_reasons, watermark, error, notes
FROM ingests
ORDER BY ingest_id DESC;
