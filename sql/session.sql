-- Settings of every store connection (read-only ones too): DuckDB's progress bar would
-- print to stderr during long queries, also when stderr is a log file, not a terminal.
SET enable_progress_bar = false;
SET enable_progress_bar_print = false
