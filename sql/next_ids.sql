SELECT (SELECT coalesce(max(run_id), 0) + 1 FROM ingest_runs) AS run_id,
       (SELECT coalesce(max(ref_id), 0) + 1 FROM source_refs) AS ref_base
