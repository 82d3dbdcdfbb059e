-- Benchmarks of the checked batch whose stored results are of the other class than this
-- unit's (the built-in synthetic demo vs real sources): they must never be mixed.
SELECT DISTINCT b.name
FROM (SELECT DISTINCT benchmark_id FROM checked WHERE reason IS NULL) c
JOIN benchmarks b USING (benchmark_id)
WHERE EXISTS (
    SELECT 1 FROM results x
    JOIN source_refs s USING (ref_id)
    JOIN ingest_runs r ON r.run_id = s.run_id
    WHERE x.benchmark_id = c.benchmark_id AND (r.kind = 'synthetic') <> ($kind = 'synthetic')
)
ORDER BY 1
