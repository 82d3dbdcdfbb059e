SELECT model, first_seen_at, first_run FROM models ORDER BY model_id
