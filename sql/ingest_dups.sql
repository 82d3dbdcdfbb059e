-- (model, item) pairs seen more than once in this batch; conflict when values differ.
CREATE OR REPLACE TEMP TABLE dups AS
SELECT model_id, item_id, count(*) AS n, bool_and(value) <> bool_or(value) AS conflict
FROM batch
GROUP BY model_id, item_id
HAVING count(*) > 1
