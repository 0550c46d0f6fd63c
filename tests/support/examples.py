"""How many examples a property test runs: a fixed number in `make test` (the `ci` profile),
more in `make test-random` (`dev`), many more in `make test-deep` (`deep`) and in `make fuzz`
(`long`, the reference models). A test that needs a count of its own (each example starts a
cluster write, say) says what it runs in `make test`; the other profiles scale it, so one
number per test is the whole story (README, "Testing": the table of counts)."""

from __future__ import annotations

import os

# max_examples of a property test that names no count of its own, per profile
DEFAULT = {"ci": 8, "dev": 16, "deep": 100, "long": 400}
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")


def examples(in_make_test: int) -> int:
    """A count of its own, scaled from what it runs in `make test` as the profile's default
    is from the `ci` default."""
    return max(1, round(in_make_test * DEFAULT.get(PROFILE, DEFAULT["ci"]) / DEFAULT["ci"]))
