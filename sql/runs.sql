SELECT * FROM ingest_runs ORDER BY run_id DESC LIMIT $1
