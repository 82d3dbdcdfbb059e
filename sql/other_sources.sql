-- How many successful ingests came from anything but the built-in synthetic leaderboard.
SELECT count(*) FROM ingest_runs WHERE status = 'ok' AND kind <> 'synthetic'
