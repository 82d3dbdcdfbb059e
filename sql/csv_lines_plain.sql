-- Each parsed CSV row with its file line when the reader rejected no line (see csv_lines.sql).
CREATE OR REPLACE TEMP VIEW src_raw_lines AS
SELECT * EXCLUDE ("sparseeval$row"), "sparseeval$row" + 1 AS "sparseeval$line" FROM src_raw
