"""Helpers the tests share (reference implementations, fixtures, planted mutants); no tests."""
