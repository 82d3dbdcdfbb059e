SELECT * FROM quarantine WHERE $1 IS NULL OR run_id = $1 ORDER BY run_id, source_ref, line
