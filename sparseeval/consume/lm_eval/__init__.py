"""lm-evaluation-harness: samples files, anchor doc ids, the generated tasks and their runtime."""
