SELECT sum(n - 1) FILTER (WHERE NOT conflict), sum(n) FILTER (WHERE conflict) FROM dups
