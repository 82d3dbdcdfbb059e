SELECT count(*) FROM batch
