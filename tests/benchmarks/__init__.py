"""Short runs of every `make bench` suite, so the benchmarks cannot rot (no timing asserted)."""
