"""Fault injection under load with an independent checker (`python -m chaos`), and a soak."""
