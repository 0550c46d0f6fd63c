"""Where the suite's time went, printed at the end of every run: the slowest test files (the
time each held its worker: with `--dist loadfile` a file runs on one worker, so this is its
wall time there), the slowest set-ups (a fixture that starts servers or a stack shows here),
and the run against the budget `make test` promises (README, "Testing"). Whoever adds a slow
test sees it the same day.
"""

from __future__ import annotations

import os
import time
from collections import Counter

import pytest

# make test on a fresh clone, on 2 cores: static checks, browser and engine included
BUDGET_SECONDS = 8 * 60
SHOWN_FILES = 15
SHOWN_SETUPS = 8


class TimeReport:
    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self.started = time.monotonic()
        self.files: Counter[str] = Counter()
        self.tests: Counter[str] = Counter()
        self.setups: list[tuple[float, str]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Every phase of every test, also those run by xdist workers (their reports reach
        the controller through this hook)."""
        path = report.nodeid.split("::", 1)[0]
        self.files[path] += report.duration
        if report.when == "call":
            self.tests[path] += 1
        if report.when == "setup":
            self.setups.append((report.duration, report.nodeid))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.files:
            return
        write = terminalreporter.write_line
        wall = time.monotonic() - self.started
        busy = sum(self.files.values())
        terminalreporter.section("where the time went")
        write(f"slowest {SHOWN_FILES} test files (seconds on their worker, tests):")
        for path, seconds in self.files.most_common(SHOWN_FILES):
            write(f"  {seconds:7.1f}  {self.tests[path]:4d}  {path}")
        write(f"slowest {SHOWN_SETUPS} set-ups (fixtures: servers, stacks, clusters):")
        for seconds, nodeid in sorted(self.setups, reverse=True)[:SHOWN_SETUPS]:
            write(f"  {seconds:7.1f}  {nodeid}")
        share = busy / (wall * self.workers) if wall > 0 else 0.0
        write(
            f"pytest: {wall:.0f} s wall on {self.workers} worker(s), {busy:.0f} worker-seconds "
            f"({share:.0%} busy); the budget of make test is {BUDGET_SECONDS} s in all "
            f"(README, Testing): pytest alone used {wall / BUDGET_SECONDS:.0%} of it"
        )


def register(config: pytest.Config) -> None:
    """On the process that prints (not on xdist's workers)."""
    if hasattr(config, "workerinput"):
        return
    workers = config.getoption("numprocesses", None) or 1
    if not isinstance(workers, int):  # "auto", "logical"
        workers = os.cpu_count() or 1
    config.pluginmanager.register(TimeReport(workers), "time-report")
