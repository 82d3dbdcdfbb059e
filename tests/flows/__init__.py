"""Tests of the flows layer."""
