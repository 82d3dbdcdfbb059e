-- Results store schema (DuckDB). Idempotent: safe to run on every open.

CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);

CREATE TABLE IF NOT EXISTS benchmarks (
    benchmark_id SMALLINT PRIMARY KEY,
    name VARCHAR NOT NULL UNIQUE,
    description VARCHAR,
    created_at TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- ord: the benchmark's own item order when the source knows it (doc index); NULL otherwise.
CREATE TABLE IF NOT EXISTS items (
    item_id INTEGER NOT NULL,
    benchmark_id SMALLINT NOT NULL,
    item VARCHAR NOT NULL,
    ord BIGINT,
    first_run INTEGER NOT NULL
);
-- Item identity (sparseeval/consume/answers/identity.py): the source's content hash (`name:value`,
-- e.g. `doc_hash:...`) and what the id is (`lm-eval doc id`, `leaderboard row index`,
-- `opaque`); NULL in stores written before (unknown).
ALTER TABLE items ADD COLUMN IF NOT EXISTS hash VARCHAR;
ALTER TABLE items ADD COLUMN IF NOT EXISTS id_kind VARCHAR;

CREATE TABLE IF NOT EXISTS models (
    model_id INTEGER NOT NULL,
    model VARCHAR NOT NULL,
    first_seen_at TIMESTAMPTZ NOT NULL,
    first_run INTEGER NOT NULL
);

-- What was read: one row per ingest attempt, whatever its outcome.
CREATE TABLE IF NOT EXISTS ingest_runs (
    run_id INTEGER PRIMARY KEY,
    kind VARCHAR NOT NULL,
    source VARCHAR NOT NULL,
    content_sha256 VARCHAR,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    status VARCHAR NOT NULL,
    n_read BIGINT DEFAULT 0,
    n_new BIGINT DEFAULT 0,
    n_updated BIGINT DEFAULT 0,
    n_unchanged BIGINT DEFAULT 0,
    n_quarantined BIGINT DEFAULT 0,
    n_duplicates BIGINT DEFAULT 0,
    message VARCHAR
);

-- Provenance of stored values: a source reference (file, repo@revision) within a run.
CREATE TABLE IF NOT EXISTS source_refs (
    ref_id INTEGER NOT NULL,
    run_id INTEGER NOT NULL,
    source VARCHAR NOT NULL,
    source_ref VARCHAR NOT NULL,
    ingested_at TIMESTAMPTZ NOT NULL
);

-- Current value per (model, item); no index on purpose (bulk joins are faster).
CREATE TABLE IF NOT EXISTS results (
    benchmark_id SMALLINT NOT NULL,
    model_id INTEGER NOT NULL,
    item_id INTEGER NOT NULL,
    correct BOOLEAN NOT NULL,
    ref_id INTEGER NOT NULL
);

-- Values that a newer ingest replaced.
CREATE TABLE IF NOT EXISTS result_history (
    benchmark_id SMALLINT NOT NULL,
    model_id INTEGER NOT NULL,
    item_id INTEGER NOT NULL,
    correct BOOLEAN NOT NULL,
    ref_id INTEGER NOT NULL,
    replaced_by_ref INTEGER NOT NULL
);
-- Graded items (F1, ROUGE, a judge's score): the score in (0, 1) where the source has one,
-- with `correct` its threshold at 0.5; NULL for a binary answer (`correct` is the value).
-- Added by migration: stores written before get the column, every row NULL (binary).
ALTER TABLE results ADD COLUMN IF NOT EXISTS score DOUBLE;
ALTER TABLE result_history ADD COLUMN IF NOT EXISTS score DOUBLE;

-- Each model's reported score per benchmark (the number its source reports, as an
-- accuracy in [0, 1]) with its definition in words; provenance as for results.
CREATE TABLE IF NOT EXISTS reported_scores (
    benchmark_id SMALLINT NOT NULL,
    model_id INTEGER NOT NULL,
    score DOUBLE NOT NULL,
    definition VARCHAR NOT NULL,
    ref_id INTEGER NOT NULL
);

-- Reported scores that a newer ingest replaced.
CREATE TABLE IF NOT EXISTS reported_score_history (
    benchmark_id SMALLINT NOT NULL,
    model_id INTEGER NOT NULL,
    score DOUBLE NOT NULL,
    definition VARCHAR NOT NULL,
    ref_id INTEGER NOT NULL,
    replaced_by_ref INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS quarantine (
    run_id INTEGER NOT NULL,
    source VARCHAR NOT NULL,
    source_ref VARCHAR,
    line BIGINT,
    raw VARCHAR,
    reason VARCHAR NOT NULL
);

-- Hub repositories: the revision last ingested and the files already read.
CREATE TABLE IF NOT EXISTS hub_repos (
    repo VARCHAR PRIMARY KEY,
    revision VARCHAR NOT NULL,
    run_id INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS hub_files (
    repo VARCHAR NOT NULL,
    path VARCHAR NOT NULL,
    revision VARCHAR NOT NULL,
    run_id INTEGER NOT NULL
);

CREATE OR REPLACE VIEW results_view AS
SELECT m.model, b.name AS benchmark, i.item, r.correct, r.score,
       s.source, s.source_ref, s.ingested_at, s.run_id
FROM results r
JOIN models m USING (model_id)
JOIN items i USING (item_id)
JOIN benchmarks b ON b.benchmark_id = r.benchmark_id
JOIN source_refs s USING (ref_id);;

CREATE OR REPLACE VIEW reported_scores_view AS
SELECT m.model, b.name AS benchmark, r.score, r.definition,
       s.source, s.source_ref, s.ingested_at, s.run_id
FROM reported_scores r
JOIN models m USING (model_id)
JOIN benchmarks b ON b.benchmark_id = r.benchmark_id
JOIN source_refs s USING (ref_id);
