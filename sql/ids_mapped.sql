-- `src` with each id replaced by its canonical form (id_maps.sql); `raw_*` keep the text read.
CREATE OR REPLACE TEMP VIEW src_ids AS
SELECT coalesce(m.canon, s.model) AS model, coalesce(b.canon, s.benchmark) AS benchmark,
       coalesce(i.canon, s.item) AS item, s.correct, s.ord, s.line, s.ref_no,
       coalesce(m.problem, b.problem, i.problem) AS id_problem,
       s.model AS raw_model, s.benchmark AS raw_benchmark, s.item AS raw_item
FROM src s
LEFT JOIN id_map m ON m.what = 'model id' AND m.raw = s.model
LEFT JOIN id_map b ON b.what = 'benchmark name' AND b.raw = s.benchmark
LEFT JOIN id_map i ON i.what = 'item id' AND i.raw = s.item
