-- Register a benchmark by name; a no-op when it exists.
INSERT INTO benchmarks (benchmark_id, name, description)
SELECT (SELECT coalesce(max(benchmark_id), 0) + 1 FROM benchmarks), $1, $2
WHERE NOT EXISTS (SELECT 1 FROM benchmarks WHERE name = $1)
