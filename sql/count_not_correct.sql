-- How many of one run's rows were quarantined for a value that is no correctness value.
SELECT count(*) FROM quarantine WHERE run_id = $run AND starts_with(reason, 'not a correctness value')
