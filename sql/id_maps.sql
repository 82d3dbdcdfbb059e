-- Canonical forms of the distinct ids of `src` (the rule of sparseeval/consume/answers/ids.py, which
-- passes the patterns): a printable ASCII id is trimmed of spaces; any other has zero-width
-- characters dropped, edge spaces trimmed and is NFC-normalized; one with a control or
-- format character gets a problem instead, and so does a benchmark name that cannot be
-- published. One scan of `src` for all three columns.
SET VARIABLE id_control = $id_control;
SET VARIABLE id_drop = $id_drop;
SET VARIABLE id_format = $id_format;
SET VARIABLE id_edges = $id_edges;
SET VARIABLE benchmark_rule = $benchmark_rule;

CREATE OR REPLACE TEMP MACRO sparseeval_canonical(x) AS
    CASE WHEN NOT regexp_matches(x, '[^ -~]') THEN trim(x)
         ELSE nfc_normalize(regexp_replace(
                  regexp_replace(x, getvariable('id_drop'), '', 'g'),
                  getvariable('id_edges'), '', 'g'))
    END;

CREATE OR REPLACE TEMP MACRO sparseeval_id_problem(x, what) AS
    CASE WHEN NOT regexp_matches(x, '[^ -~]') THEN NULL
         WHEN regexp_matches(x, getvariable('id_control'))
             THEN what || ' has a control character'
         WHEN regexp_matches(regexp_replace(x, getvariable('id_drop'), '', 'g'),
                             getvariable('id_format'))
             THEN what || ' has a format character'
    END;

CREATE OR REPLACE TEMP TABLE id_map AS
SELECT what, raw, canon,
       coalesce(problem,
                CASE WHEN what = 'benchmark name' AND canon <> ''
                          AND NOT regexp_full_match(canon, getvariable('benchmark_rule'))
                     THEN 'benchmark name cannot be published (letters, digits, ''_'', ''-'','
                          || ' ''.''): ' || left(canon, 60)
                END) AS problem
FROM (
SELECT what, raw, sparseeval_canonical(raw) AS canon,
       sparseeval_id_problem(raw, what) AS problem
FROM (
    SELECT CASE WHEN GROUPING(model) = 0 THEN 'model id'
                WHEN GROUPING(benchmark) = 0 THEN 'benchmark name' ELSE 'item id' END AS what,
           coalesce(model, benchmark, item) AS raw
    FROM src
    GROUP BY GROUPING SETS ((model), (benchmark), (item))
))
WHERE raw IS NOT NULL
