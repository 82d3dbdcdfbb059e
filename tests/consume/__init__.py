"""Tests of the consume layer."""
