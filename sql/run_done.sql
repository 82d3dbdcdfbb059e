-- The last successful run that read exactly this content.
SELECT max(run_id) FROM ingest_runs WHERE content_sha256 = $sha AND status = 'ok'
