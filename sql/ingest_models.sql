-- New model names of the checked batch get the next ids (ordered by name).
INSERT INTO models
SELECT (SELECT coalesce(max(model_id), 0) FROM models) + row_number() OVER (ORDER BY n.model),
       n.model, $ts, $run
FROM (SELECT DISTINCT model FROM checked WHERE reason IS NULL) n
ANTI JOIN models m ON m.model = n.model
