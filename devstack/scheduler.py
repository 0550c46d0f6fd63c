"""A local stand-in for EventBridge Scheduler: the template's ScheduleV2/Schedule events.

`rate(...)` expressions run on their interval (the first run one interval after start, as in
AWS); `cron(minutes hours day-of-month month day-of-week year)` expressions run at each UTC
minute they match (so the rollover runs at 00:05 UTC while `make run` is up). Each run gets the
schedule's Input (an empty object by default).
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

log = logging.getLogger("devstack.scheduler")
_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")
_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


_CRON = re.compile(r"cron\((\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\)")
_DAYS = {"SUN": 1, "MON": 2, "TUE": 3, "WED": 4, "THU": 5, "FRI": 6, "SAT": 7}


def _matches(field: str, value: int, names: dict[str, int] | None = None) -> bool:
    if field in ("*", "?"):
        return True
    for part in field.split(","):
        low, _, high = part.partition("-")
        first = (names or {}).get(low, None) or int(low)
        last = ((names or {}).get(high, None) or int(high)) if high else first
        if first <= value <= last:
            return True
    return False


def next_cron(expression: str, after: datetime) -> datetime | None:
    """The next minute at or after `after` (UTC) that an EventBridge cron expression fires."""
    found = _CRON.fullmatch(expression.strip())
    if not found:
        return None
    minute, hour, dom, month, dow, year = found.groups()
    moment = after.astimezone(UTC).replace(second=0, microsecond=0)
    for _ in range(60 * 24 * 366):
        weekday = moment.isoweekday() % 7 + 1  # EventBridge: 1 = Sunday ... 7 = Saturday
        if (
            _matches(minute, moment.minute)
            and _matches(hour, moment.hour)
            and _matches(dom, moment.day)
            and _matches(month, moment.month)
            and _matches(dow, weekday, _DAYS)
            and _matches(year, moment.year)
        ):
            return moment
        moment += timedelta(minutes=1)
    return None


def interval_seconds(expression: str) -> float | None:
    """Seconds between runs of a rate() expression; None for what this stand-in can't run."""
    found = _RATE.fullmatch(expression.strip())
    if not found:
        return None
    return int(found[1]) * _SECONDS[found[2].rstrip("s")]


class Scheduler:
    def __init__(self, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._clock = clock

    def add(
        self,
        name: str,
        expression: str,
        payload: dict[str, Any],
        invoke: Callable[[dict[str, Any]], Any],
        *,
        scale: float = 1.0,
        detach: bool = False,
        immediately: bool = False,
    ) -> bool:
        """Run `invoke` on the schedule. `detach`: each run in a thread of its own, so a run
        that outlasts the interval (the live publisher's minute-long loop) does not delay the
        next, as EventBridge's asynchronous invocations would not. `immediately`: one run at
        start too, for a function the local stack needs from the first second."""
        interval = interval_seconds(expression)
        if interval is None and next_cron(expression, self._clock()) is None:
            log.warning("%s: schedule %r is not run locally", name, expression)
            return False

        def run() -> None:
            if detach:
                threading.Thread(target=run_now, name=f"run-{name}", daemon=True).start()
            else:
                run_now()

        def run_now() -> None:
            try:
                result = invoke(payload)
                log.info("%s ran on schedule %s: %s", name, expression, json.dumps(result)[:200])
            except Exception as exc:  # a failed run is retried on the next tick
                if self._stop.is_set():
                    return  # cut short by the stack stopping: not a failure
                log.warning("%s failed on schedule %s: %s", name, expression, exc)

        def every_interval() -> None:
            if immediately:
                run()
            while not self._stop.wait((interval or 0) * scale):
                run()

        def on_cron() -> None:
            if immediately:
                run()
            after = self._clock() + timedelta(minutes=1)  # from the next minute on
            while (at := next_cron(expression, after)) is not None:
                if self._stop.wait(max(0.0, (at - self._clock()).total_seconds())):
                    return
                run()
                after = at + timedelta(minutes=1)

        loop = every_interval if interval is not None else on_cron

        thread = threading.Thread(target=loop, name=f"schedule-{name}", daemon=True)
        thread.start()
        self._threads.append(thread)
        return True

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
