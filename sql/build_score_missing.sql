-- The first names of the given models (ids), for a message about missing reported scores.
SELECT model FROM models WHERE model_id IN (SELECT unnest($ids)) ORDER BY model LIMIT 5
