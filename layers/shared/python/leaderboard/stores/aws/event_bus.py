"""Where `period.ended` events go: an EventBridge bus (AWS, and the local stand-in of `make
run`), behind the `PeriodEventSink` interface the rollover takes.

The bus is the one place an event is emitted; the template's rule forwards it to the webhook
queue, and anything else that wants period results subscribes with a rule of its own.
"""

from __future__ import annotations

import logging
import os
import threading
from typing import Any, Protocol

from leaderboard.domain.errors import Unavailable
from leaderboard.domain.period_events import EVENT_TYPE, PeriodEnded

log = logging.getLogger(__name__)
SOURCE = "leaderboard"


class PeriodEventSink(Protocol):
    """Takes one event per closed period; raises `Unavailable` when it could not be taken (the
    rollover then runs again later, and the event's id stays the same)."""

    def emit(self, event: PeriodEnded) -> None: ...


class EventBridgeSink:
    """PutEvents on one bus. The client is created once, on the first event: a rollover that
    closes nothing never loads botocore's EventBridge model."""

    def __init__(
        self, bus_name: str, *, endpoint_url: str | None = None, client: Any = None
    ) -> None:
        self.bus_name = bus_name
        self.endpoint_url = endpoint_url
        self._client = client
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        if self._client is None:
            with self._lock:
                if self._client is None:
                    import boto3

                    self._client = boto3.client("events", endpoint_url=self.endpoint_url)
        return self._client

    def emit(self, event: PeriodEnded) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        entry = {
            "EventBusName": self.bus_name,
            "Source": SOURCE,
            "DetailType": EVENT_TYPE,
            "Detail": event.to_json(),
            "Resources": [],
        }
        try:
            reply = self.client.put_events(Entries=[entry])
        except (BotoCoreError, ClientError) as exc:
            raise Unavailable(f"the event bus is unavailable: {exc}") from exc
        if reply.get("FailedEntryCount", 0):
            failed = (reply.get("Entries") or [{}])[0]
            raise Unavailable(
                "the event bus refused the period.ended event: "
                f"{failed.get('ErrorCode')}: {failed.get('ErrorMessage')}"
            )
        log.info(
            "period.ended emitted",
            extra={"event_id": event.event_id, "board_id": event.board_id},
        )


class DiscardingSink:
    """No bus configured (EVENT_BUS_NAME unset: tests, tools): events are logged and dropped."""

    def emit(self, event: PeriodEnded) -> None:
        log.info("no event bus configured: period.ended %s not emitted", event.event_id)


class ListSink:
    """Keeps what it is given, in order: for tests of whatever emits events."""

    def __init__(self) -> None:
        self.events: list[PeriodEnded] = []

    def emit(self, event: PeriodEnded) -> None:
        self.events.append(event)


def sink_from_env() -> PeriodEventSink:
    """EVENT_BUS_NAME (the template sets it on the rollover) and, locally, EVENTS_ENDPOINT_URL
    (the stand-in bus of `make run`); without a bus name, a sink that drops events."""
    name = os.environ.get("EVENT_BUS_NAME", "").strip()
    if not name:
        return DiscardingSink()
    return EventBridgeSink(name, endpoint_url=os.environ.get("EVENTS_ENDPOINT_URL") or None)
