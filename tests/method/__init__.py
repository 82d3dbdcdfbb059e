"""Tests of the method layer."""
