-- (model, item) pairs seen more than once in this batch; conflict when values (or graded
-- scores) differ.
CREATE OR REPLACE TEMP TABLE dups AS
SELECT model_id, item_id, count(*) AS n,
       count(DISTINCT coalesce(score, value::DOUBLE)) > 1 AS conflict
FROM batch
GROUP BY model_id, item_id
HAVING count(*) > 1
