-- A wide table's `score` column (percent): one reported score per row that has one.
SELECT model, $benchmark AS benchmark, score, 100.0 AS scale, $definition AS definition,
       "sparseeval$line" AS line, 0 AS ref_no
FROM src_raw_lines
WHERE score IS NOT NULL AND trim(score) <> ''
