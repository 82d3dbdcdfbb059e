-- Whether a benchmark holds any graded score (its item scale is then `graded`).
SELECT EXISTS (SELECT 1 FROM results WHERE benchmark_id = $bid AND score IS NOT NULL)
