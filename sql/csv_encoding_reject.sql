-- The first line DuckDB could not decode as UTF-8 (NULL when the file is UTF-8 text).
SELECT min(line) FROM csv_rejects WHERE error_type::VARCHAR = 'INVALID ENCODING'
