-- Parse a CSV file as text columns (names from its header, read by Python); lines that do not parse go to `csv_rejects`.
-- "sparseeval$row" numbers the parsed rows in file order (a window with no ORDER BY keeps the
-- scan's order, which DuckDB preserves; a table's rowid does not, inside a transaction).
CREATE OR REPLACE TEMP TABLE src_raw AS
SELECT *, row_number() OVER () AS "sparseeval$row"
FROM read_csv(
    $path, auto_detect = false, columns = $cols, header = true, delim = ',', quote = '"', escape = '"',
    ignore_errors = true, store_rejects = true,
    rejects_table = 'csv_rejects', rejects_scan = 'csv_reject_scans'
)
