"""The chaos checker is independent of the service: it imports neither `leaderboard` nor
`devstack` (directly or through anything it imports), and its model follows docs/API.md."""

from __future__ import annotations

import ast
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from chaos.checker import Board, Standings, _ranks, period_ids

ROOT = Path(__file__).resolve().parents[2]


def test_the_checker_source_imports_nothing_of_the_service():
    tree = ast.parse((ROOT / "chaos" / "checker.py").read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(node.module or "")
    assert names, "the walk found no imports at all"
    assert not {n for n in names if n.split(".")[0] in ("leaderboard", "devstack", "functions")}
    assert not {n for n in names if n.startswith("chaos") and n != "chaos.checker"}


def test_importing_the_checker_loads_no_service_module():
    """The whole import graph, in a fresh interpreter that could import the service."""
    probe = (
        "import sys; import chaos.checker; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in"
        " ('leaderboard', 'devstack', 'functions') or m in ('chaos.harness', 'chaos.run'));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=ROOT,
        env={"PYTHONPATH": f"{ROOT / 'layers/shared/python'}:{ROOT}", "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_period_ids_follow_the_contract():
    at = datetime(2027, 1, 1, 23, 59, tzinfo=UTC)  # a Friday in ISO week 53 of 2026
    assert period_ids(("all-time", "daily", "weekly", "monthly"), at) == [
        "all-time",
        "2027-01-01",
        "2026-W53",
        "2027-01",
    ]


def test_the_model_applies_each_mode_and_ranks_each_tie_policy():
    inc = Standings("desc", "shared")
    for player, score, version in [("a", 5, 1), ("b", 7, 2), ("a", 2, 3), ("c", 1, 4)]:
        inc.apply("increment", player, score, version)
    assert inc.scores() == {"a": 7, "b": 7, "c": 1}
    assert (inc.rank("a"), inc.rank("b"), inc.rank("c")) == (1, 1, 3)

    best = Standings("asc", "first")
    for player, score, version in [("a", 5, 1), ("b", 3, 2), ("a", 9, 3), ("a", 3, 4)]:
        best.apply("best", player, score, version)
    # a reached 3 at version 4, after b (version 2): b first
    assert best.order() == ["b", "a"] and best.rank("a") == 2

    put = Standings("desc", "first")
    for player, score, version in [("a", 5, 1), ("b", 5, 2), ("a", 5, 3), ("b", 1, 4)]:
        put.apply("set", player, score, version)
    # setting the same score again does not move a behind b
    assert put.scores() == {"a": 5, "b": 1} and put.order() == ["a", "b"]


def test_ranks_from_a_listing():
    shared = Board("x", "best", "desc", "shared", ("all-time",))
    assert _ranks(shared, [("a", 9), ("b", 7), ("c", 7), ("d", 1)]) == {
        "a": 1,
        "b": 2,
        "c": 2,
        "d": 4,
    }
    first = Board("y", "best", "desc", "first", ("all-time",))
    assert _ranks(first, [("a", 9), ("b", 7), ("c", 7)]) == {"a": 1, "b": 2, "c": 3}
