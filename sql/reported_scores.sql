-- Reported scores with their definition and provenance, of one benchmark or all.
SELECT model, benchmark, score, definition, source, source_ref, run_id
FROM reported_scores_view
WHERE $benchmark IS NULL OR benchmark = $benchmark
ORDER BY benchmark, model
