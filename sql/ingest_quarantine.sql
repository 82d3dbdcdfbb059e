-- Rows the validator rejected, and rows the reader could not parse at all.
-- `raw` keeps at most 1,000 characters of a rejected row (the reason says why it was long).
INSERT INTO quarantine
SELECT $run, $source, r.source_ref, c.line,
       CASE WHEN length(c.raw) > 1000 THEN left(c.raw, 1000) || '...' ELSE c.raw END,
       c.reason
FROM (
    SELECT line, ref_no, reason,
           concat_ws(',', coalesce(raw_model, ''), coalesce(raw_benchmark, ''),
                     coalesce(raw_item, ''), coalesce(correct, '')) AS raw
    FROM checked
    WHERE reason IS NOT NULL
) c LEFT JOIN unit_refs r ON r.ref_no = c.ref_no
UNION ALL
SELECT $run, $source, r.source_ref, p.line, p.raw, p.reason
FROM pre_bad p LEFT JOIN unit_refs r ON r.ref_no = p.ref_no
