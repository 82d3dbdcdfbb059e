-- The content hash of items stored without one, from this unit's rows.
UPDATE items SET hash = n.hash
FROM (SELECT b.benchmark_id, h.item, h.hash
      FROM item_hash_frame h JOIN benchmarks b ON b.name = h.benchmark) n
WHERE items.benchmark_id = n.benchmark_id AND items.item = n.item AND items.hash IS NULL
