-- The good rows as integer ids, ready to compare with the stored values (`score`: the
-- graded score, NULL for a binary answer).
CREATE OR REPLACE TEMP TABLE batch AS
SELECT c.benchmark_id, m.model_id, i.item_id, c.value, c.ref_no, c.line, c.score
FROM checked c
JOIN models m ON m.model = c.model
JOIN items i ON i.benchmark_id = c.benchmark_id AND i.item = c.item
WHERE c.reason IS NULL
