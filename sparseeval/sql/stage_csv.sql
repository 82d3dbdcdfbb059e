-- Parse a CSV file as text columns (names from its header, read by Python); lines that do not parse go to `csv_rejects`.
CREATE OR REPLACE TEMP TABLE src_raw AS
SELECT * FROM read_csv(
    $path, auto_detect = false, columns = $cols, header = true, delim = ',', quote = '"', escape = '"',
    ignore_errors = true, store_rejects = true,
    rejects_table = 'csv_rejects', rejects_scan = 'csv_reject_scans'
)
