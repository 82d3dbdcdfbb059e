-- The most frequent reasons one run quarantined rows for, with their counts.
SELECT reason, count(*) AS n FROM quarantine WHERE run_id = $run
GROUP BY reason ORDER BY n DESC, reason LIMIT $top
