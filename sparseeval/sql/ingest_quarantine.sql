-- Rows the validator rejected, and rows the reader could not parse at all.
INSERT INTO quarantine
SELECT $run, $source, r.source_ref, c.line,
       concat_ws(',', coalesce(c.model, ''), coalesce(c.benchmark, ''), coalesce(c.item, ''),
                 coalesce(c.correct, '')),
       c.reason
FROM checked c LEFT JOIN unit_refs r ON r.ref_no = c.ref_no
WHERE c.reason IS NOT NULL
UNION ALL
SELECT $run, $source, r.source_ref, p.line, p.raw, p.reason
FROM pre_bad p LEFT JOIN unit_refs r ON r.ref_no = p.ref_no
