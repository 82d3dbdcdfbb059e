-- Items of this unit whose stored content hash differs from the one just read.
SELECT count(*)
FROM item_hash_frame h
JOIN benchmarks b ON b.name = h.benchmark
JOIN items i ON i.benchmark_id = b.benchmark_id AND i.item = h.item
WHERE i.hash IS NOT NULL AND i.hash <> h.hash
