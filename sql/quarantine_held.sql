-- What the quarantine holds: per source (unit) and reason, the rows and the last run.
SELECT source, reason, count(*) AS n_rows, max(run_id) AS last_run
FROM quarantine GROUP BY source, reason ORDER BY last_run DESC, source, n_rows DESC, reason
