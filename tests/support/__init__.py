"""Helpers shared by the tests and the benchmarks: real servers started on loopback."""
