-- Settings of every store connection (read-only ones too): DuckDB's progress bar would
-- print to stderr during long queries, also when stderr is a log file, not a terminal.
SET enable_progress_bar = false;
SET enable_progress_bar_print = false;
-- A bound on DuckDB's memory (its default is 80% of RAM): past it, the big staging queries
-- (a wide CSV of 20,000 models x 2,000 items unpivoted to 40M rows) spill to `{store}.tmp`
-- next to the store. bench/ingest.py --wide measures the peak with and without it.
SET memory_limit = '2GB'
