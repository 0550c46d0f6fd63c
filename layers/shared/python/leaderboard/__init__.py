"""Leaderboard service: the shared code every function imports (mounted as a Lambda layer).

`domain` holds the rules (no AWS, no I/O), `stores` one adapter per store, `services` the use
cases that tie them together, `api` the HTTP glue shared by the handlers.
"""
