"""Tests of the pipeline layer."""
