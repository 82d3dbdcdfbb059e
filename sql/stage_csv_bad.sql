-- One quarantine row per CSV line the reader rejected.
CREATE OR REPLACE TEMP VIEW pre_bad AS
SELECT line::BIGINT AS line, any_value(csv_line) AS raw,
       'malformed CSV line: ' || string_agg(DISTINCT error_type::VARCHAR, '; ') AS reason,
       0::INTEGER AS ref_no
FROM csv_rejects
GROUP BY line
