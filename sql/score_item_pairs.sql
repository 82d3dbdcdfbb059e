-- The staged reported scores (`score_frame`, without a stager's refusal) and the stored ones
-- of the same benchmarks and definitions, each with its model's stored items in that
-- benchmark: (model, benchmark, definition, score text, number, scale, staged, n_items,
-- item_mean). For `contradiction.register_contradictions`; a stored score of a model and
-- benchmark staged again is left out (the staged one replaces it).
WITH bench AS (
    SELECT benchmark_id, name FROM benchmarks b SEMI JOIN score_frame f ON f.benchmark = b.name
), stats AS (
    SELECT r.benchmark_id, r.model_id, count(*) AS n_items,
           avg(coalesce(r.score, CAST(r.correct AS DOUBLE))) AS item_mean
    FROM results r SEMI JOIN bench b ON b.benchmark_id = r.benchmark_id
    GROUP BY r.benchmark_id, r.model_id
), staged AS (
    SELECT f.model, f.benchmark, f.definition, f.score,
           TRY_CAST(trim(f.score) AS DOUBLE) AS number, f.scale, TRUE AS staged
    FROM score_frame f
    WHERE f.refusal IS NULL AND f.model IS NOT NULL AND f.benchmark IS NOT NULL
), stored AS (
    SELECT m.model, b.name AS benchmark, s.definition, NULL AS score, s.score AS number,
           1.0 AS scale, FALSE AS staged
    FROM reported_scores s JOIN bench b USING (benchmark_id) JOIN models m USING (model_id)
    WHERE s.definition IN (SELECT definition FROM score_frame)
      AND NOT EXISTS (SELECT 1 FROM staged t WHERE t.model = m.model AND t.benchmark = b.name)
)
SELECT p.model, p.benchmark, p.definition, p.score, p.number, p.scale, p.staged,
       st.n_items, st.item_mean
FROM (SELECT * FROM staged UNION ALL SELECT * FROM stored) p
JOIN bench b ON b.name = p.benchmark
JOIN models m ON m.model = p.model
JOIN stats st ON st.benchmark_id = b.benchmark_id AND st.model_id = m.model_id
