"""The test suite; a package so that tests import shared pieces as `tests.helpers`."""
