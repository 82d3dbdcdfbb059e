-- New items get the next ids; `ord` keeps the source's own item order when known, `id_kind`
-- says what the unit's ids are (item_identity.sql adds their hashes).
INSERT INTO items (item_id, benchmark_id, item, ord, first_run, id_kind)
SELECT (SELECT coalesce(max(item_id), 0) FROM items)
           + row_number() OVER (ORDER BY n.benchmark_id, n.ord NULLS LAST, n.item),
       n.benchmark_id, n.item, n.ord, $run, $id_kind
FROM (SELECT benchmark_id, item, min(ord) AS ord FROM checked WHERE reason IS NULL GROUP BY ALL) n
ANTI JOIN items i ON i.benchmark_id = n.benchmark_id AND i.item = n.item
