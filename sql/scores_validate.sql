-- The reported-score validator: a stager registers `score_frame` (model, benchmark,
-- score VARCHAR, scale DOUBLE (100 for percent, 1 for a fraction), definition, line,
-- ref_no); `scores_checked` adds benchmark_id, the score as a fraction and a reason when
-- the row is bad. Two rows of one source for the same model and benchmark that disagree
-- are both refused; of agreeing ones the first is kept (`keep`). A stager's own `refusal`
-- comes first; a score its model's stored items contradict (`score_contradictions`, from
-- `contradiction.register_contradictions`) is refused with that reason (`contradicted`).
CREATE OR REPLACE TEMP VIEW scores_checked AS
WITH v AS (
    SELECT f.*, b.benchmark_id,
           TRY_CAST(trim(f.score) AS DOUBLE) AS number, c.why AS contradiction
    FROM score_frame f LEFT JOIN benchmarks b ON b.name = f.benchmark
    LEFT JOIN (SELECT DISTINCT * FROM score_contradictions) c
        ON c.model = f.model AND c.benchmark = f.benchmark AND c.score = f.score
), r AS (
    SELECT * EXCLUDE (contradiction),
           CASE WHEN refusal IS NOT NULL THEN refusal
                WHEN model IS NULL OR trim(model) = '' THEN 'missing model'
                WHEN benchmark IS NULL OR trim(benchmark) = '' THEN 'missing benchmark'
                WHEN score IS NULL OR trim(score) = '' THEN 'missing reported score'
                WHEN length(model) > getvariable('max_model_len')
                    THEN format('model id is {:,} characters long (at most {})',
                                length(model), getvariable('max_model_len'))
                WHEN benchmark_id IS NULL THEN 'unknown benchmark: ' || left(benchmark, 60)
                WHEN number IS NULL OR isnan(number) OR isinf(number)
                    THEN 'reported score is not a number: ' || left(score, 60)
                WHEN number < 0 OR number > scale
                    THEN format('reported score {} is outside 0..{} ({})', left(score, 30),
                                CAST(scale AS INTEGER),
                                CASE WHEN scale = 100 THEN 'percent'
                                     WHEN number <= 100 THEN 'a fraction: a percentage where a fraction belongs?'
                                     ELSE 'a fraction' END)
                WHEN contradiction IS NOT NULL THEN contradiction
                WHEN definition IS NULL OR trim(definition) = ''
                    THEN 'reported score without a definition'
           END AS reason,
           number / scale AS value,
           contradiction IS NOT NULL AND refusal IS NULL AND number BETWEEN 0 AND scale
               AS contradicted
    FROM v
), d AS (
    SELECT *,
           count(DISTINCT value) FILTER (WHERE reason IS NULL)
               OVER (PARTITION BY model, benchmark) AS n_values,
           row_number() OVER (PARTITION BY model, benchmark, reason IS NULL
                              ORDER BY ref_no, line) AS nth
    FROM r
)
SELECT * EXCLUDE (reason, n_values),
       CASE WHEN reason IS NULL AND n_values > 1
                THEN 'conflicting reported scores for this model and benchmark in one source'
            ELSE reason
       END AS reason,
       reason IS NULL AND n_values = 1 AND nth > 1 AS duplicate
FROM d
