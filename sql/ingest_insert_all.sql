-- Fast path when none of the batch's pairs is stored yet.
INSERT INTO results
SELECT benchmark_id, model_id, item_id, value, $ref_base + ref_no FROM batch
