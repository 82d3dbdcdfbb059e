UPDATE ingest_runs
SET finished_at = now(), status = $status, n_read = $n_read, n_new = $n_new,
    n_updated = $n_updated, n_unchanged = $n_unchanged, n_quarantined = $n_quarantined,
    n_duplicates = $n_duplicates, message = $message
WHERE run_id = $run
