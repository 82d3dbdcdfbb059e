-- A long CSV table's `score` column (percent), repeated on every item row of a model and
-- benchmark: one row per distinct value (two values for one pair are refused as a conflict).
SELECT model, benchmark, score, 100.0 AS scale, $definition AS definition,
       min("sparseeval$line") AS line, 0 AS ref_no
FROM src_raw_lines
WHERE score IS NOT NULL AND trim(score) <> ''
GROUP BY model, benchmark, score
