-- Before a unit's bad rows are quarantined: drop those kept from earlier reads of the same
-- content (a file re-read every night is held once, not once per night).
DELETE FROM quarantine
WHERE run_id IN (SELECT run_id FROM ingest_runs WHERE content_sha256 = $sha AND run_id <> $run)
