-- Each stored item of a benchmark with its content hash and id kind (NULL: unknown).
SELECT i.item, i.hash, i.id_kind
FROM items i JOIN benchmarks b USING (benchmark_id)
WHERE b.name = $benchmark
