-- Items of this unit stored without an id kind (by a store written before) get the unit's.
UPDATE items SET id_kind = $id_kind
WHERE id_kind IS NULL
  AND item_id IN (SELECT i.item_id FROM checked c
                  JOIN items i ON i.benchmark_id = c.benchmark_id AND i.item = c.item
                  WHERE c.reason IS NULL)
