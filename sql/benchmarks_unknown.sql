-- The benchmark names of the staged rows (`src_ids`, canonical) the store does not know,
-- with their row counts: candidates for `new_benchmarks` (store/validate.py accept_new).
SELECT s.benchmark, count(*) AS n
FROM src_ids s
WHERE s.benchmark IS NOT NULL
  AND NOT EXISTS (SELECT 1 FROM benchmarks b WHERE b.name = s.benchmark)
GROUP BY s.benchmark
ORDER BY s.benchmark
