-- A Parquet file's rows with their 0-based row number (`file_row_number`).
SELECT * FROM read_parquet($path, file_row_number = true)
