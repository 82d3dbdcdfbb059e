-- Models whose first result (in one benchmark when $bid is set) came after a time or a run.
WITH firsts AS (
    SELECT model_id, min(ref_id) AS ref_id
    FROM (
        SELECT model_id, ref_id FROM results WHERE $bid IS NULL OR benchmark_id = $bid
        UNION ALL
        SELECT model_id, ref_id FROM result_history WHERE $bid IS NULL OR benchmark_id = $bid
    )
    GROUP BY model_id
)
SELECT m.model, s.ingested_at AS first_seen_at, s.run_id AS first_run
FROM firsts f JOIN models m USING (model_id) JOIN source_refs s USING (ref_id)
WHERE ($after IS NULL OR s.ingested_at > $after) AND ($run IS NULL OR s.run_id > $run)
ORDER BY s.ref_id, m.model
