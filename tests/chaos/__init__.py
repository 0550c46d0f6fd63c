"""Short runs of `make chaos` and `make soak`, and the checker's independence and model."""
