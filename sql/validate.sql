-- The one row validator: every source stages rows into `src`
-- (model, benchmark, item, correct VARCHAR, ord BIGINT, line BIGINT, ref_no INTEGER);
-- `checked` (a table: computed once, then read by every ingest step) has benchmark_id,
-- the boolean value, the graded score and a reason when the row is bad; the raw texts
-- (`raw_*`, `correct`) are kept for bad rows only (quarantine shows them; a good row's are
-- never read). Correctness accepts 0/1, true/false and -1/+1 (case-insensitive, 1.0/0.0
-- too), and a graded score strictly between 0 and 1 (F1, ROUGE, a judge's score): `score`
-- keeps it and `value` is score >= 0.5; `score` is NULL for a binary answer.
-- Ids are canonical (sparseeval/consume/answers/ids.py, which passes the patterns): a printable ASCII
-- id is trimmed of spaces; any other has zero-width characters dropped, edge spaces trimmed
-- and is NFC-normalized, and one with a control or format character is refused (its raw
-- text, `raw_*`, goes to quarantine). Ids longer than the bounds (MAX_*_LEN, in characters)
-- are refused; a benchmark name must be one that can be published (id_maps.sql).
SET VARIABLE max_model_len = $max_model;
SET VARIABLE max_item_len = $max_item;
SET VARIABLE max_benchmark_len = $max_benchmark;
-- the answer words: sparseeval/consume/answers/responses.py CORRECT_WORDS / WRONG_WORDS
SET VARIABLE correct_words = $correct_words;
SET VARIABLE wrong_words = $wrong_words;

CREATE OR REPLACE TEMP TABLE checked AS
WITH c AS (
    SELECT * FROM src_ids
), v AS (
    SELECT c.*, b.benchmark_id,
           CASE WHEN list_contains(getvariable('correct_words'), lower(trim(c.correct))) THEN true
                WHEN list_contains(getvariable('wrong_words'), lower(trim(c.correct))) THEN false
           END AS word
    FROM c LEFT JOIN benchmarks b ON b.name = c.benchmark
), n AS (  -- a number only where no answer word matched (most rows never parse one)
    SELECT *, CASE WHEN word IS NULL THEN TRY_CAST(trim(correct) AS DOUBLE) END AS number
    FROM v
), g AS (
    SELECT * EXCLUDE (word, number),
           CASE WHEN word IS NULL AND number > 0 AND number < 1 THEN number END AS score,
           coalesce(word, CASE WHEN number > 0 AND number < 1 THEN number >= 0.5 END) AS value
    FROM n
)
, r AS (
SELECT *,
       CASE WHEN raw_model IS NULL OR model = '' THEN 'missing model'
            WHEN raw_benchmark IS NULL OR benchmark = '' THEN 'missing benchmark'
            WHEN raw_item IS NULL OR item = '' THEN 'missing item'
            WHEN correct IS NULL OR trim(correct) = '' THEN 'missing correctness value'
            WHEN id_problem IS NOT NULL THEN id_problem
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
FROM g
)
SELECT model, benchmark_id, item, ord, value, score, ref_no, line, reason,
       CASE WHEN reason IS NOT NULL THEN raw_model END AS raw_model,
       CASE WHEN reason IS NOT NULL THEN raw_benchmark END AS raw_benchmark,
       CASE WHEN reason IS NOT NULL THEN raw_item END AS raw_item,
       CASE WHEN reason IS NOT NULL THEN correct END AS correct
FROM r
