-- Wide table (model + one column per item) to long rows; blank cells are not results.
CREATE OR REPLACE TEMP TABLE src_long AS
SELECT u.model, $benchmark AS benchmark, u.item, u.correct, c.ord, u."sparseeval$line" AS line,
       0::INTEGER AS ref_no
FROM (
    UNPIVOT src_raw_lines ON COLUMNS(* EXCLUDE (model, "sparseeval$line"))
    INTO NAME item VALUE correct
) u
JOIN wide_cols c ON c.item = u.item;

CREATE OR REPLACE TEMP VIEW src AS SELECT * FROM src_long
