"""A model's answers: files and values, canonical ids, item identity (NumPy-free)."""
