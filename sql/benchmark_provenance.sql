-- Where the current results of some benchmarks came from: one row per source kind and
-- source (a source holding several of them counted once), with the number of results and
-- the newest ingest.
SELECT r.kind, r.source, count(*) AS n_results, max(s.ingested_at) AS last_ingested
FROM results AS x
JOIN benchmarks AS b USING (benchmark_id)
JOIN source_refs AS s USING (ref_id)
JOIN ingest_runs AS r ON r.run_id = s.run_id
WHERE list_contains($benchmarks, b.name)
GROUP BY r.kind, r.source
ORDER BY r.kind, r.source
