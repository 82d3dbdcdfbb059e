-- The files (source refs) that the given items' current results came from, most rows first.
SELECT s.source_ref, count(*) AS n
FROM results r JOIN source_refs s USING (ref_id)
WHERE r.benchmark_id = $bid AND r.item_id IN (SELECT unnest($ids))
GROUP BY s.source_ref ORDER BY n DESC, s.source_ref LIMIT 3
