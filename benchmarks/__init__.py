"""Benchmarks (`make bench`): the paths users pay for, measured on the real stores."""
