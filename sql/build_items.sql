-- A benchmark's items with results, in their stable order: the source's order when
-- known, then natural order of ids (subject, then number).
SELECT item_id, item
FROM items
WHERE benchmark_id = $bid
  AND item_id IN (SELECT DISTINCT item_id FROM results WHERE benchmark_id = $bid)
ORDER BY ord NULLS LAST,
         regexp_extract(item, '^(.*?)(\d*)$', 1),
         try_cast(regexp_extract(item, '(\d+)$', 1) AS BIGINT) NULLS FIRST,
         item, item_id
