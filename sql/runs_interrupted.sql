-- Runs left 'running' by a process that ended mid-ingest (none of their data committed);
-- `$live` are the runs this process is doing now.
UPDATE ingest_runs
SET status = 'interrupted', finished_at = now(), message = $message
WHERE status = 'running' AND NOT list_contains($live::INTEGER[], run_id)
