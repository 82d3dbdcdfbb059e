-- Each benchmark with its counts of items, models and current results.
SELECT b.name AS benchmark, b.description,
       (SELECT count(*) FROM items i WHERE i.benchmark_id = b.benchmark_id) AS n_items,
       (SELECT count(DISTINCT r.model_id) FROM results r WHERE r.benchmark_id = b.benchmark_id) AS n_models,
       (SELECT count(*) FROM results r WHERE r.benchmark_id = b.benchmark_id) AS n_results
FROM benchmarks b
ORDER BY b.name
