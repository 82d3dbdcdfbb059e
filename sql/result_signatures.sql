-- Per benchmark with results: numbers that change whenever any current result changes
-- (new rows raise the count, updates move ref ids, flips move the sum of values).
SELECT b.name, count(*) AS n, max(r.ref_id) AS max_ref, sum(r.ref_id::BIGINT) AS sum_ref,
       sum(r.correct::INTEGER) AS n_correct
FROM benchmarks b JOIN results r USING (benchmark_id)
GROUP BY b.name
ORDER BY b.name
