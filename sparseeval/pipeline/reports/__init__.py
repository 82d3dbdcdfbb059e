"""Reports: a published set's evaluation report (with plots) and a refresh run's report."""
