"""DuckDB schema and queries as .sql files, read by `sparseeval.pipeline.store.db.sql`."""
