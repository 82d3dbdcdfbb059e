INSERT INTO source_refs
SELECT $ref_base + ref_no, $run, $source, source_ref, $ts FROM unit_refs ORDER BY ref_no
