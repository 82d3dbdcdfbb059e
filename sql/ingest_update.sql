-- Keep the replaced values in history, then overwrite them.
CREATE OR REPLACE TEMP TABLE changed AS
SELECT r.benchmark_id, r.model_id, r.item_id, r.correct AS old, r.ref_id AS old_ref,
       b.value, $ref_base + b.ref_no AS ref_id, r.score AS old_score, b.score
FROM batch b JOIN results r ON r.model_id = b.model_id AND r.item_id = b.item_id
WHERE r.correct <> b.value OR r.score IS DISTINCT FROM b.score;

INSERT INTO result_history (benchmark_id, model_id, item_id, correct, ref_id, replaced_by_ref,
                            score)
SELECT benchmark_id, model_id, item_id, old, old_ref, ref_id, old_score FROM changed;

UPDATE results SET correct = c.value, ref_id = c.ref_id, score = c.score
FROM changed c
WHERE results.model_id = c.model_id AND results.item_id = c.item_id
