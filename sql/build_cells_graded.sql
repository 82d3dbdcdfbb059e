-- A graded benchmark's cells: the score in [0, 1] (a binary row's 0/1 where it has none).
SELECT model_id, item_id, coalesce(score, correct::DOUBLE) AS score
FROM results WHERE benchmark_id = $bid
