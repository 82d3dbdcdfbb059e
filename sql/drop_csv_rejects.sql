DROP TABLE IF EXISTS csv_rejects;
DROP TABLE IF EXISTS csv_reject_scans
