"""The live publisher: coalesces each board's changes into at most `rate` messages per channel
in any second (ticks start at least 1/rate apart) and publishes them to the event API.

It never touches the write path. The submit script already appends every applied event to the
board's outbox stream; on each tick the publisher reads what is new there for every board (one
pipelined round trip), builds one message per changed channel and publishes them. The cost grows
with boards x ticks, not with writes: a thousand submissions in one tick make one message.

One run holds a Redis lease so a single publisher ticks at a time. Runs are started every
minute; a new run asks the running one to hand over and takes the lease at its next tick.
Everything here is best-effort: a failing board or publish is counted and logged, the other
boards and channels go on, and clients notice a missed message by its `previous_version`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.live import (
    DEFAULT_LIVE_TOP,
    PLAYER_NAMESPACE,
    Channel,
    ChannelUpdate,
    PlayerUpdate,
    fit_message,
)
from leaderboard.domain.periods import BOARD_PERIOD_KINDS, CUSTOM, current_period
from leaderboard.stores.redis.live.channels import BoardChanges, BoardChannels
from leaderboard.stores.redis.live.index import LiveIndex

log = logging.getLogger(__name__)


class EventPublisher(Protocol):
    def publish(self, channel: str, events: list[str]) -> None: ...


@dataclass
class LiveReport:
    ticks: int = 0
    messages: int = 0
    player_messages: int = 0  # of the messages, those on player channels
    published: int = 0
    failed: int = 0  # not published: the event API refused it, or did not answer
    refused: int = 0  # of those, refused (4xx): a defect or misconfiguration, never transient
    truncated: int = 0  # published cut to the event size limit (domain.live.fit_message)
    board_errors: int = 0
    entries_read: int = 0
    entries_skipped: int = 0
    waited_for_lease_ms: int = 0
    handed_over: bool = False
    errors: list[str] = field(default_factory=list)

    def note(self, error: str) -> None:
        if len(self.errors) < 20:  # a sample for the log, not every repeat
            self.errors.append(error[:300])


@dataclass(frozen=True, slots=True)
class _Outcome:
    truncated: bool
    error: str | None = None
    refused: bool = False


def _encode(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def _iso_ms(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def board_channels(board: dict[str, Any], now: datetime) -> BoardChannels:
    """The channels of a board from its public object, with the period ids current at `now`."""
    kinds = [k for k in BOARD_PERIOD_KINDS if k in (board.get("periods") or [])]
    regions: list[str | None] = [None, *(board.get("regions") or [])]
    # only a custom kind needs the whole board object (its calendar): ticks run 4 times a second
    config = BoardConfig.from_public(board) if CUSTOM in kinds else None

    def period_id(kind: str) -> str:
        return config.current_period_id(kind, now) if config else current_period(kind, now).id

    channels = tuple(Channel(kind, period_id(kind), region) for kind in kinds for region in regions)
    return BoardChannels(
        board["board_id"],
        channels,
        int(board.get("live_top") or DEFAULT_LIVE_TOP),
        int(board.get("shards") or 1),
    )


class LivePublisher:
    def __init__(
        self,
        index: LiveIndex,
        publisher: EventPublisher,
        *,
        rate: float,
        namespace: str,
        player_namespace: str = PLAYER_NAMESPACE,
        workers: int = 8,
        catalog_seconds: float = 1.0,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.index = index
        self.publisher = publisher
        self.interval = 1.0 / rate
        self.namespace = namespace
        self.player_namespace = player_namespace
        self.catalog_seconds = catalog_seconds
        self.clock = clock
        self.monotonic = monotonic
        self.sleep = sleep
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="publish")
        self._catalog: list[dict[str, Any]] = []
        self._catalog_at = float("-inf")

    # --- one tick ---------------------------------------------------------------------------
    def tick(self, report: LiveReport) -> None:
        """Read every board's changes once and publish one message per changed channel."""
        now = self.clock()
        if self.monotonic() - self._catalog_at >= self.catalog_seconds:
            self._catalog = self.index.catalog()  # new boards and rule changes, each second
            self._catalog_at = self.monotonic()
        boards = [board_channels(b, now) for b in self._catalog]
        report.ticks += 1
        updates: list[ChannelUpdate | PlayerUpdate] = []
        for board, result in zip(boards, self.index.changes(boards), strict=True):
            if isinstance(result, BoardChanges):
                updates.extend(result.updates)
                updates.extend(result.player_updates)
                report.player_messages += len(result.player_updates)
                report.entries_read += result.entries_read
                report.entries_skipped += result.skipped
            else:
                report.board_errors += 1
                report.note(f"board {board.board_id}: {type(result).__name__}: {result}")
        if not updates:
            return
        published_at = _iso_ms(now)
        outcomes = self._pool.map(lambda u: self._publish(u, published_at), updates)
        for outcome in outcomes:
            report.messages += 1
            report.truncated += outcome.truncated
            if outcome.error is None:
                report.published += 1
                continue
            report.failed += 1
            report.refused += outcome.refused
            report.note(outcome.error)

    def _publish(self, update: ChannelUpdate | PlayerUpdate, published_at: str) -> _Outcome:
        if isinstance(update, PlayerUpdate):  # ten passers at most: far below any size limit
            channel = update.name(self.player_namespace)
            text, truncated = _encode(update.to_message(published_at)), False
        else:
            channel = update.name(self.namespace)
            text, truncated = fit_message(update.to_message(published_at), _encode)
        if truncated:
            log.info("%s: message cut to the event size limit (truncated: true)", channel)
        try:
            self.publisher.publish(channel, [text])
        except Exception as exc:  # any failure of one channel stays with that channel
            status = getattr(exc, "status", None)
            refused = isinstance(status, int) and 400 <= status < 500
            if refused:  # logged at once: subscribers of this channel now miss messages
                log.error("publish to %s refused (%s): %s", channel, status, exc)
            return _Outcome(truncated, f"{type(exc).__name__}: {exc}", refused)
        return _Outcome(truncated)

    # --- a run: ticks until the deadline or a newer run asks to take over -------------------
    def run(
        self, owner: str, seconds: float, *, wait_for_successor: float = 0.0, lease_ms: int = 5000
    ) -> LiveReport:
        """Tick for `seconds`, then on for up to `wait_for_successor` more until the next run
        asks to take over, so the hand-over costs at most a tick even when that run is late
        (a cold start)."""
        report = LiveReport()
        started = self.monotonic()
        deadline = started + seconds + wait_for_successor
        while True:
            try:
                # renewed until the running one sees it
                self.index.ask_to_hand_over(owner, lease_ms)
                if self.index.take_lease(owner, lease_ms):
                    break
            except Exception as exc:  # Redis unreachable: try again, it may come back
                report.board_errors += 1
                report.note(f"lease: {type(exc).__name__}: {exc}")
            if self.monotonic() >= deadline:
                report.note("no lease before this run's deadline")
                return report
            self.sleep(min(0.05, self.interval))
        report.waited_for_lease_ms = int((self.monotonic() - started) * 1000)
        try:
            while self.monotonic() < deadline:
                tick_started = self.monotonic()
                # Every Redis call of an iteration is in here: a run must never sit out the rest
                # of its minute because Redis was down or frozen for a moment (docs/API.md: a
                # live board is back within 2 s of Redis answering again).
                try:
                    if self.index.successor_waiting(owner):
                        report.handed_over = True
                        break
                    if not self.index.take_lease(owner, lease_ms):
                        report.note("lost the lease")  # another run holds it now
                        break
                    tick_started = self.monotonic()  # with the clock the tick stamps
                    self.tick(report)
                except Exception as exc:  # Redis unreachable: keep ticking, it may come back
                    report.board_errors += 1
                    report.note(f"tick: {type(exc).__name__}: {exc}")
                    self._catalog_at = float("-inf")  # read the boards anew once it answers
                # Ticks start at least 1/rate apart, late ones included: a channel never gets
                # more than `rate` messages in any window of a second (docs/API.md).
                pause = tick_started + self.interval - self.monotonic()
                if pause > 0:
                    self.sleep(pause)
        finally:
            try:
                self.index.release_lease(owner)
            except Exception as exc:  # the lease expires by itself
                report.note(f"release: {type(exc).__name__}: {exc}")
        return report
