CREATE OR REPLACE TEMP VIEW src AS
SELECT model::VARCHAR AS model, benchmark::VARCHAR AS benchmark, item::VARCHAR AS item,
       correct::VARCHAR AS correct, NULL::BIGINT AS ord, file_row_number + 1 AS line,
       0::INTEGER AS ref_no
FROM src_parquet
