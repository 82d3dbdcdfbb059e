-- A benchmark's items in their stable order: the source's order, then natural order of ids.
SELECT item_id, item
FROM items
WHERE benchmark_id = $bid
ORDER BY ord NULLS LAST,
         regexp_extract(item, '^(.*?)(\d*)$', 1),
         try_cast(regexp_extract(item, '(\d+)$', 1) AS BIGINT) NULLS FIRST,
         item, item_id
