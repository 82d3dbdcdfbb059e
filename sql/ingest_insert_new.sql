INSERT INTO results (benchmark_id, model_id, item_id, correct, ref_id, score)
SELECT b.benchmark_id, b.model_id, b.item_id, b.value, $ref_base + b.ref_no, b.score
FROM batch b ANTI JOIN results r ON r.model_id = b.model_id AND r.item_id = b.item_id
