"""Method layer: the ±1 matrix, splits, anchor selection, predictors, estimators, baselines.

Pure: arrays in, arrays out. Imports only `sparseeval.consume` (the NumPy readers).
"""
