"""Scoring a model from a set: the predictor, intervals, flags, more items, checks (NumPy only)."""
