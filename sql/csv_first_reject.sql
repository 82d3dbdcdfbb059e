SELECT min(line), count(DISTINCT line), any_value(error_message) FROM csv_rejects
