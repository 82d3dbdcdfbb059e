-- Rows that repeat the (model, item) of the previous row in sorted order: 0 means no
-- duplicates (a sort within each model is much cheaper than a full GROUP BY).
SELECT count(*)
FROM (
    SELECT item_id = lag(item_id) OVER (PARTITION BY model_id ORDER BY item_id) AS repeat
    FROM batch
)
WHERE repeat
