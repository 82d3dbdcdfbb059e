-- The reported score and its definition of every model that has one in the benchmark.
SELECT model_id, score, definition FROM reported_scores WHERE benchmark_id = $bid
