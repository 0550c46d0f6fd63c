"""The instruction-count benchmark runs end to end on small boards, so it cannot rot (no count
asserted: figures belong to `make bench`). What it does assert: each kind of call was counted
on both boards, under callgrind."""

from __future__ import annotations

import pytest

from benchmarks import script_instructions

pytestmark = pytest.mark.server  # it starts Valkeys of its own, under valgrind


def test_instruction_counts_run_end_to_end() -> None:
    if not script_instructions.available():
        pytest.skip("valgrind is not installed")
    rows = script_instructions.run(script_instructions.Settings(players=100, calls=5))
    assert [r["call"] for r in rows] == list(script_instructions.KINDS)
    for row in rows:
        assert row["plain_instructions"] > 0 and row["model_instructions"] > 0, row
        assert row["ratio"] > 0, row
