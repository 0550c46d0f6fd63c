"""Where the suite's time went, printed at the end of every run: the slowest test files (the
time each held its worker: with `--dist loadfile` a file runs on one worker, so this is its
wall time there; beside it the CPU its worker and the processes it started and ended spent:
on 2 cores the suite is bound by CPU, so that column is what a cut must come from), the
slowest set-ups (a fixture that starts servers or a stack shows here),
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
        self.cpu: Counter[str] = Counter()
        self.tests: Counter[str] = Counter()
        self.setups: list[tuple[float, str]] = []
        self.worker_cpu = 0.0

    @pytest.hookimpl(optionalhook=True)  # xdist's hook: absent when xdist is not loaded
    def pytest_testnodedown(self, node: object, error: object) -> None:
        """A worker's own CPU time (the tests run in it, not the servers it started)."""
        output = getattr(node, "workeroutput", None) or {}
        self.worker_cpu += float(output.get("cpu_seconds", 0.0))

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Every phase of every test, also those run by xdist workers (their reports reach
        the controller through this hook)."""
        path = report.nodeid.split("::", 1)[0]
        self.files[path] += report.duration
        self.cpu[path] += sum(v for k, v in report.user_properties if k == CPU_PROPERTY)
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
        write(
            f"slowest {SHOWN_FILES} test files (seconds on their worker, CPU seconds of the"
            " worker and the processes it started and ended, tests):"
        )
        for path, seconds in self.files.most_common(SHOWN_FILES):
            write(f"  {seconds:7.1f}  {self.cpu[path]:7.1f}  {self.tests[path]:4d}  {path}")
        write(f"most CPU, {SHOWN_FILES} test files (CPU seconds, seconds on their worker):")
        for path, cpu in self.cpu.most_common(SHOWN_FILES):
            write(f"  {cpu:7.1f}  {self.files[path]:7.1f}  {path}")
        write(f"slowest {SHOWN_SETUPS} set-ups (fixtures: servers, stacks, clusters):")
        for seconds, nodeid in sorted(self.setups, reverse=True)[:SHOWN_SETUPS]:
            write(f"  {seconds:7.1f}  {nodeid}")
        share = busy / (wall * self.workers) if wall > 0 else 0.0
        if self.worker_cpu:
            write(
                f"CPU of the pytest workers themselves: {self.worker_cpu:.0f} s (servers, stacks "
                "and other processes they started come on top)"
            )
        write(
            f"pytest: {wall:.0f} s wall on {self.workers} worker(s), {busy:.0f} worker-seconds "
            f"({share:.0%} busy); the budget of make test is {BUDGET_SECONDS} s in all "
            f"(README, Testing): pytest alone used {wall / BUDGET_SECONDS:.0%} of it"
        )


CPU_PROPERTY = "cpu_seconds"


def _cpu_now() -> float:
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


class PhaseCpu:
    """Where the tests run: the CPU spent since the previous report (this process, and the
    processes it started that have ended), carried on each report to the controller. A
    server a module started is counted when the module's teardown reaps it."""

    def __init__(self) -> None:
        self.last = _cpu_now()

    def pytest_collection_finish(self) -> None:
        self.last = _cpu_now()  # collection's imports belong to no file

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: object) -> object:
        report = yield
        now = _cpu_now()
        report.user_properties.append((CPU_PROPERTY, round(now - self.last, 3)))  # type: ignore[attr-defined]
        self.last = now
        return report


class WorkerCpu:
    """On an xdist worker: hands its own CPU time to the controller when it ends."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    def pytest_sessionfinish(self) -> None:
        times = os.times()
        self.config.workeroutput["cpu_seconds"] = times.user + times.system  # type: ignore[attr-defined]


def register(config: pytest.Config) -> None:
    """The report on the process that prints; on xdist's workers, what they send it."""
    config.pluginmanager.register(PhaseCpu(), "time-report-phase-cpu")
    if hasattr(config, "workerinput"):
        config.pluginmanager.register(WorkerCpu(config), "time-report-worker")
        return
    workers = config.getoption("numprocesses", None) or 1
    if not isinstance(workers, int):  # "auto", "logical"
        workers = os.cpu_count() or 1
    config.pluginmanager.register(TimeReport(workers), "time-report")
