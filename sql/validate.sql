-- The one row validator: every source stages rows into `src`
-- (model, benchmark, item, correct VARCHAR, ord BIGINT, line BIGINT, ref_no INTEGER);
-- `checked` adds benchmark_id, the boolean value and a reason when the row is bad.
-- Correctness accepts 0/1, true/false and -1/+1 (case-insensitive, 1.0/0.0 too).
-- Ids longer than the bounds of store/validate.py (MAX_*_LEN, in characters) are refused.
SET VARIABLE max_model_len = $max_model;
SET VARIABLE max_item_len = $max_item;
SET VARIABLE max_benchmark_len = $max_benchmark;

CREATE OR REPLACE TEMP VIEW checked AS
WITH v AS (
    SELECT s.model, s.benchmark, s.item, s.correct, s.ord, s.line, s.ref_no, b.benchmark_id,
           CASE WHEN lower(trim(s.correct)) IN ('1', '1.0', '+1', '+1.0', 'true', 't') THEN true
                WHEN lower(trim(s.correct)) IN ('0', '0.0', '-1', '-1.0', 'false', 'f') THEN false
           END AS value
    FROM src s LEFT JOIN benchmarks b ON b.name = s.benchmark
)
SELECT *,
       CASE WHEN model IS NULL OR trim(model) = '' THEN 'missing model'
            WHEN benchmark IS NULL OR trim(benchmark) = '' THEN 'missing benchmark'
            WHEN item IS NULL OR trim(item) = '' THEN 'missing item'
            WHEN correct IS NULL OR trim(correct) = '' THEN 'missing correctness value'
            WHEN length(model) > getvariable('max_model_len')
                THEN format('model id is {:,} characters long (at most {})',
                            length(model), getvariable('max_model_len'))
            WHEN length(benchmark) > getvariable('max_benchmark_len')
                THEN format('benchmark name is {:,} characters long (at most {})',
                            length(benchmark), getvariable('max_benchmark_len'))
            WHEN length(item) > getvariable('max_item_len')
                THEN format('item id is {:,} characters long (at most {})',
                            length(item), getvariable('max_item_len'))
            WHEN benchmark_id IS NULL THEN 'unknown benchmark: ' || left(benchmark, 60)
            WHEN value IS NULL THEN 'not a correctness value: ' || left(correct, 60)
       END AS reason
FROM v
