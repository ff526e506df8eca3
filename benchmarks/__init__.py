"""Benchmarks of syncd at enterprise scale: run with ``make bench`` (see benchmarks/run.py)."""
