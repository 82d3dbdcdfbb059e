-- Fast path when none of the batch's pairs is stored yet.
INSERT INTO results (benchmark_id, model_id, item_id, correct, ref_id, score)
SELECT benchmark_id, model_id, item_id, value, $ref_base + ref_no, score FROM batch
