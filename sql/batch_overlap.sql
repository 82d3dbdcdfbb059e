-- Whether any stored result has one of the batch's models and one of its items: when none
-- has, no batch row is stored yet (the usual case: new models, or a new benchmark). A join
-- with the batch's few distinct models and items, ~10x cheaper than `ingest_compare`'s
-- join with every batch row (results grows by a benchmark's rows each night).
SELECT EXISTS (
    SELECT 1 FROM results r
    WHERE r.model_id IN (SELECT DISTINCT model_id FROM batch)
      AND r.item_id IN (SELECT DISTINCT item_id FROM batch)
)
