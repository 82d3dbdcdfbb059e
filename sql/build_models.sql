-- Models with at least one current result in the benchmark, by name.
SELECT m.model_id, m.model
FROM models m
WHERE m.model_id IN (SELECT DISTINCT model_id FROM results WHERE benchmark_id = $bid)
ORDER BY m.model
