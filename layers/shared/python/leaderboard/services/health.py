"""Health: can this deployment reach each of its stores right now?"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class HealthService:
    def __init__(self, probes: dict[str, Callable[[], object]]) -> None:
        self.probes = probes

    def check(self) -> dict[str, Any]:
        checks: dict[str, dict[str, Any]] = {}
        for name, probe in self.probes.items():
            started = time.perf_counter()
            try:
                probe()
                checks[name] = {"status": "ok"}
            except Exception as exc:  # any failure means "unreachable" to the caller
                checks[name] = {"status": "unreachable", "error": type(exc).__name__}
            checks[name]["latency_ms"] = round((time.perf_counter() - started) * 1000, 1)
        unreachable = sorted(n for n, c in checks.items() if c["status"] != "ok")
        return {
            "status": "degraded" if unreachable else "ok",
            "unreachable": unreachable,
            "checks": checks,
        }
