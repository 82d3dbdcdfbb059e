-- A long Parquet table's `score` column (percent): one row per distinct value per pair.
SELECT model::VARCHAR AS model, benchmark::VARCHAR AS benchmark, score::VARCHAR AS score,
       100.0 AS scale, $definition AS definition, min(file_row_number) + 1 AS line,
       0 AS ref_no
FROM src_parquet
WHERE score IS NOT NULL AND trim(score::VARCHAR) <> ''
GROUP BY ALL
