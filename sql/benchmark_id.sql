SELECT benchmark_id FROM benchmarks WHERE name = $1
