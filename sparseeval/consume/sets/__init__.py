"""Published anchor sets: the folder layout, loading and verifying a set, its files (NumPy only)."""
