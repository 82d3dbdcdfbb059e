SELECT model_id, item_id, correct FROM results WHERE benchmark_id = $bid
