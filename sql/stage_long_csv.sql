CREATE OR REPLACE TEMP VIEW src AS
SELECT model, benchmark, item, correct, NULL::BIGINT AS ord, "sparseeval$line" AS line,
       0::INTEGER AS ref_no
FROM src_raw_lines
