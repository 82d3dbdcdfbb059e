-- Refused reported scores go to quarantine; new models get ids; the good ones replace
-- the stored values (the replaced ones kept in history).
INSERT INTO quarantine
SELECT $run, $source, u.source_ref, c.line,
       concat_ws(',', coalesce(c.model, ''), coalesce(c.benchmark, ''),
                 coalesce(left(c.score, 100), '')),
       c.reason
FROM scores_checked c LEFT JOIN unit_refs u ON u.ref_no = c.ref_no
WHERE c.reason IS NOT NULL;

INSERT INTO models
SELECT (SELECT coalesce(max(model_id), 0) FROM models) + row_number() OVER (ORDER BY n.model),
       n.model, $ts, $run
FROM (SELECT DISTINCT model FROM scores_checked WHERE reason IS NULL) n
ANTI JOIN models m ON m.model = n.model;

CREATE OR REPLACE TEMP TABLE score_batch AS
SELECT c.benchmark_id, m.model_id, c.value, c.definition, $ref_base + c.ref_no AS ref_id
FROM scores_checked c JOIN models m ON m.model = c.model
WHERE c.reason IS NULL AND NOT c.duplicate;

CREATE OR REPLACE TEMP TABLE score_changed AS
SELECT r.benchmark_id, r.model_id, r.score, r.definition, r.ref_id AS old_ref,
       b.value, b.definition AS new_definition, b.ref_id
FROM score_batch b
JOIN reported_scores r ON r.model_id = b.model_id AND r.benchmark_id = b.benchmark_id
WHERE r.score <> b.value OR r.definition <> b.definition;

INSERT INTO reported_score_history
SELECT benchmark_id, model_id, score, definition, old_ref, ref_id FROM score_changed;

UPDATE reported_scores SET score = c.value, definition = c.new_definition, ref_id = c.ref_id
FROM score_changed c
WHERE reported_scores.model_id = c.model_id AND reported_scores.benchmark_id = c.benchmark_id;

INSERT INTO reported_scores
SELECT b.benchmark_id, b.model_id, b.value, b.definition, b.ref_id
FROM score_batch b
ANTI JOIN reported_scores r ON r.model_id = b.model_id AND r.benchmark_id = b.benchmark_id
