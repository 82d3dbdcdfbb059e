-- (read, refused, duplicate, new, changed, contradicted by the items) of the staged reported scores (before the merge).
SELECT (SELECT count(*) FROM scores_checked),
       (SELECT count(*) FROM scores_checked WHERE reason IS NOT NULL),
       (SELECT count(*) FROM scores_checked WHERE reason IS NULL AND duplicate),
       (SELECT count(*) FROM scores_checked c
        JOIN models m ON m.model = c.model
        SEMI JOIN reported_scores r ON r.model_id = m.model_id AND r.benchmark_id = c.benchmark_id
        WHERE c.reason IS NULL AND NOT c.duplicate),
       (SELECT count(*) FROM scores_checked c
        JOIN models m ON m.model = c.model
        JOIN reported_scores r ON r.model_id = m.model_id AND r.benchmark_id = c.benchmark_id
        WHERE c.reason IS NULL AND NOT c.duplicate
          AND (r.score <> c.value OR r.definition <> c.definition)),
       (SELECT count(*) FROM scores_checked WHERE reason IS NOT NULL AND contradicted)
