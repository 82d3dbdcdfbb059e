INSERT INTO ingest_runs (run_id, kind, source, content_sha256, started_at, status)
VALUES ($run, $kind, $source, $sha, $ts, $status)
