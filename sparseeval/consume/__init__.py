"""Consumer layer: load and verify published anchor sets, read answers, score (NumPy only).

Imports nothing from the other layers; a consumer with the light install uses only this.
"""
