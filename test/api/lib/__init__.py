"""Helpers of the API tests, plain modules the fixtures in conftest.py and the tests import."""
