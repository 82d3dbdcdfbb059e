-- How many batch rows already have a stored value, and how many of those differ.
SELECT count(*) AS matched,
       count(*) FILTER (WHERE r.correct <> b.value OR r.score IS DISTINCT FROM b.score) AS changed
FROM batch b JOIN results r ON r.model_id = b.model_id AND r.item_id = b.item_id
