"""`make bench`'s runner: each suite's results are on disk the moment it finishes, a failing
suite does not cost the others theirs, a run killed halfway keeps what it measured, and
BENCH_SUITES picks suites by name."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchmarks.__main__ import SUITES, Context, Suite, chosen, run_suites

ROOT = Path(__file__).resolve().parents[2]


def _printing(label: str):
    def report(results: dict) -> None:
        print(f"table of {label}: {results[label]}")

    return report


def test_each_suite_is_saved_and_printed_as_it_finishes_and_a_failure_does_not_stop_the_run(
    tmp_path, capsys
):
    seen_on_disk: list[list[str]] = []

    def first(_: Context) -> dict:
        return {"first": [1, 2]}

    def broken(_: Context) -> dict:
        # the suite before it is already saved when the next one starts
        seen_on_disk.append(sorted(p.name for p in tmp_path.iterdir()))
        raise RuntimeError("the stack did not start")

    def last(_: Context) -> dict:
        return {"last": {"p99_ms": 3.5}}

    suites = [
        Suite("first", first, _printing("first")),
        Suite("broken", broken, _printing("broken")),
        Suite("last", last, _printing("last")),
    ]
    _, failed = run_suites(suites, tmp_path)

    assert failed == ["broken"]
    assert seen_on_disk == [["first.json", "results.json"]]
    assert json.loads((tmp_path / "first.json").read_text()) == {"first": [1, 2]}
    assert json.loads((tmp_path / "last.json").read_text()) == {"last": {"p99_ms": 3.5}}
    assert not (tmp_path / "broken.json").exists()
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["first"] == [1, 2] and saved["last"] == {"p99_ms": 3.5}
    assert [saved["suites"][n]["status"] for n in ("first", "broken", "last")] == [
        "ok",
        "failed",
        "ok",
    ]
    assert saved["suites"]["broken"]["error"] == "RuntimeError: the stack did not start"
    out = capsys.readouterr().out
    # the tables come out in run order, each right after its suite
    assert (
        out.index("table of first") < out.index("suite broken FAILED") < out.index("table of last")
    )
    assert "suite first (1 of 3)" in out


_HANGING_RUN = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import benchmarks.__main__ as bench

    def quick(context):
        # something the run must undo when stopped, as the embedded servers are
        context.exits.callback(lambda: (Path(sys.argv[1]) / "stopped-cleanly").touch())
        return {"quick": {"rows": 3}}

    def hangs(_):
        print("HANGING", flush=True)
        time.sleep(600)
        return {}

    bench.RESULTS = Path(sys.argv[1])
    bench.SUITES = (
        bench.Suite("quick", quick, lambda r: None), bench.Suite("hangs", hangs, lambda r: None)
    )
    sys.exit(bench.main())
    """
)


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_run_stopped_halfway_keeps_the_finished_suites_results_and_stops_its_servers(
    tmp_path, stop
):
    """As a CI timeout (SIGTERM) or Ctrl-C stops it, also when the shell started it in the
    background with SIGINT ignored (as pytest's workers run it here)."""
    child = subprocess.Popen(
        [sys.executable, "-c", _HANGING_RUN, str(tmp_path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        assert child.stdout is not None
        deadline = time.monotonic() + 60
        for line in child.stdout:
            if "HANGING" in line or time.monotonic() > deadline:
                break
        os.killpg(child.pid, stop)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
    assert child.returncode != 0
    assert (tmp_path / "stopped-cleanly").exists()
    assert json.loads((tmp_path / "quick.json").read_text()) == {"quick": {"rows": 3}}
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["quick"] == {"rows": 3}
    assert list(saved["suites"]) == ["quick"] and saved["suites"]["quick"]["status"] == "ok"


def test_bench_suites_picks_by_name_in_run_order_and_refuses_an_unknown_one():
    names = [s.name for s in SUITES]
    assert [s.name for s in chosen(None)] == names
    assert [s.name for s in chosen(" ")] == names
    assert [s.name for s in chosen("cold_start, api")] == ["api", "cold_start"]
    with pytest.raises(SystemExit) as refused:
        chosen("api,warp")
    assert "no suite named warp" in str(refused.value) and "cold_start" in str(refused.value)


def test_bench_suites_list_names_every_suite():
    listed = subprocess.run(
        [sys.executable, "-m", "benchmarks"],
        cwd=ROOT,
        env={**os.environ, "BENCH_SUITES": "list"},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert listed.stdout.split() == [s.name for s in SUITES]
