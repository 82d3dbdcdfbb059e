-- Quarantine every row of a conflicting pair; keep the first row of an agreeing one.
INSERT INTO quarantine
SELECT $run, $source, r.source_ref, b.line,
       concat_ws(',', m.model, bm.name, i.item, coalesce(b.score::VARCHAR, b.value::INTEGER::VARCHAR)),
       'conflicting duplicate in one batch'
FROM batch b
JOIN dups d ON d.model_id = b.model_id AND d.item_id = b.item_id AND d.conflict
JOIN models m ON m.model_id = b.model_id
JOIN items i ON i.item_id = b.item_id
JOIN benchmarks bm ON bm.benchmark_id = b.benchmark_id
LEFT JOIN unit_refs r ON r.ref_no = b.ref_no;

CREATE OR REPLACE TEMP TABLE keep AS
SELECT b.*
FROM batch b JOIN dups d ON d.model_id = b.model_id AND d.item_id = b.item_id AND NOT d.conflict
QUALIFY row_number() OVER (PARTITION BY b.model_id, b.item_id ORDER BY b.line, b.ref_no) = 1;

DELETE FROM batch USING dups d
WHERE batch.model_id = d.model_id AND batch.item_id = d.item_id;

INSERT INTO batch SELECT * FROM keep
