CREATE OR REPLACE TEMP VIEW src AS
SELECT model, benchmark, item, correct, NULL::BIGINT AS ord, NULL::BIGINT AS line,
       0::INTEGER AS ref_no
FROM src_raw
