-- Drop the current results of the given items of one benchmark (`quarantine drop --benchmark`).
DELETE FROM results WHERE benchmark_id = $bid AND item_id IN (SELECT unnest($ids))
