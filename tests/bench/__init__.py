"""Tests of bench/ (the benchmark and oracle tooling)."""
