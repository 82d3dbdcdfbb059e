-- Every value stored for one (model, item): the current one and those it replaced (`score`:
-- the graded score, NULL for a binary answer).
WITH ids AS (
    SELECT m.model_id, i.item_id
    FROM models m, items i JOIN benchmarks b USING (benchmark_id)
    WHERE m.model = $model AND b.name = $benchmark AND i.item = $item
), vals AS (
    SELECT r.correct, r.score, r.ref_id, true AS current
    FROM results r JOIN ids USING (model_id, item_id)
    UNION ALL
    SELECT h.correct, h.score, h.ref_id, false
    FROM result_history h JOIN ids USING (model_id, item_id)
)
SELECT v.correct, v.score, v.current, s.source, s.source_ref, s.ingested_at, s.run_id
FROM vals v JOIN source_refs s USING (ref_id)
ORDER BY s.ref_id DESC
