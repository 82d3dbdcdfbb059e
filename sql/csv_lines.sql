-- Each parsed CSV row with its file line (for quarantine and duplicate order): the header is
-- line 1, row n ("sparseeval$row", file order) is line n + 1, and every line the reader
-- rejected (csv_rejects) shifts the rows after it. One record per line is assumed: a quoted
-- field spanning lines shifts the numbers of the rows after it.
CREATE OR REPLACE TEMP TABLE csv_gaps AS
SELECT g, max(shift) AS shift
FROM (
    SELECT line - 1 - row_number() OVER (ORDER BY line) AS g,
           row_number() OVER (ORDER BY line) AS shift
    FROM (SELECT DISTINCT line FROM csv_rejects)
)
GROUP BY g;

CREATE OR REPLACE TEMP VIEW src_raw_lines AS
SELECT s.* EXCLUDE ("sparseeval$row"),
       s."sparseeval$row" + 1 + coalesce(g.shift, 0) AS "sparseeval$line"
FROM src_raw s ASOF LEFT JOIN csv_gaps g ON s."sparseeval$row" - 1 >= g.g
