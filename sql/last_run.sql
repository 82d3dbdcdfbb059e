-- The newest ingest run id (0 when nothing was ever ingested).
SELECT coalesce(max(run_id), 0) FROM ingest_runs
