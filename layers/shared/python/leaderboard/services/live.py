"""The live publisher: publishes each board's changes to the event API as they land, at most
`rate` messages per channel in any second (messages on a channel start at least 1/rate apart).

It never touches the write path. The submit script already appends every applied event to the
board's outbox stream and, in the same round trip, wakes the publisher (lua_shared/wake.lua,
stores/redis/live/wakes.py). Leading edge, then coalesce: a board that published at least 1/rate
ago is read and published at once; changes that land inside its interval are folded into one
message at the interval's end. Each read is one pipelined round trip for every board due, and
builds one message per changed channel: a thousand submissions in one interval make one message.

One run holds a Redis lease so a single publisher serves at a time. Runs are started every
minute; a new run asks the running one to hand over and takes the lease at once.
Everything here is best-effort: a failing board or publish is counted and logged, the other
boards and channels go on, and clients notice a missed message by its `previous_version`.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.leagues import League
from leaderboard.domain.live import (
    DEFAULT_LIVE_TOP,
    PLAYER_NAMESPACE,
    Channel,
    ChannelUpdate,
    PlayerUpdate,
    fit_message,
)
from leaderboard.domain.periods import BOARD_PERIOD_KINDS, CUSTOM, current_period
from leaderboard.domain.score_tiers import Tiering
from leaderboard.stores.redis.keys import CATALOG_CHANGED, LIVE_CONTROL_CHANNEL
from leaderboard.stores.redis.live.channels import BoardChanges, BoardChannels, wake_channels
from leaderboard.stores.redis.live.index import LiveIndex
from leaderboard.stores.redis.live.wakes import WakeListener

log = logging.getLogger(__name__)


class EventPublisher(Protocol):
    def publish(self, channel: str, events: list[str]) -> None: ...


@dataclass
class LiveReport:
    ticks: int = 0  # the run's heartbeats: lease renewed, successor checked, every 1/rate
    reads: int = 0  # rounds of boards read (one pipelined round trip each)
    messages: int = 0
    player_messages: int = 0  # of the messages, those on player channels
    published: int = 0
    failed: int = 0  # not published: the event API refused it, or did not answer
    refused: int = 0  # of those, refused (4xx): a defect or misconfiguration, never transient
    truncated: int = 0  # published cut to the event size limit (domain.live.fit_message)
    retried: int = 0  # publishes tried again after a throttle (429) or a fault (5xx)
    board_errors: int = 0
    entries_read: int = 0
    entries_skipped: int = 0
    waited_for_lease_ms: int = 0
    served_ms: int = 0  # holding the lease
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
    retries: int = 0


def _encode(message: dict[str, Any]) -> str:
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


def _iso_ms(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def board_channels(board: dict[str, Any], now: datetime) -> BoardChannels:
    """The channels of a board from its public object, with the period ids current at `now`."""
    kinds = [k for k in BOARD_PERIOD_KINDS if k in (board.get("periods") or [])]
    regions: list[str | None] = [None, *(board.get("regions") or [])]
    # only a custom kind needs the whole board object (its calendar): a board is read up to
    # `rate` times a second
    config = BoardConfig.from_public(board) if CUSTOM in kinds else None

    def period_id(kind: str) -> str:
        return config.current_period_id(kind, now) if config else current_period(kind, now).id

    channels = tuple(Channel(kind, period_id(kind), region) for kind in kinds for region in regions)
    return BoardChannels(
        board["board_id"],
        channels,
        int(board.get("live_top") or DEFAULT_LIVE_TOP),
        int(board.get("shards") or 1),
        Tiering.of(board.get("score_tiers"), board.get("sort") or "desc"),
        League.parse(board["league"]) if board.get("league") else None,
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

    # --- reading boards and publishing ---------------------------------------------------------
    def tick(self, report: LiveReport) -> None:
        """Read every board's changes once and publish one message per changed channel."""
        self.publish_boards(self.index.catalog(), report)

    def publish_boards(self, catalog: list[dict[str, Any]], report: LiveReport) -> set[str]:
        """Read these boards' changes (one pipelined round trip) and publish one message per
        changed channel, concurrently; the boards that had a message."""
        now = self.clock()
        boards = [board_channels(b, now) for b in catalog]
        report.reads += 1
        updates: list[ChannelUpdate | PlayerUpdate] = []
        changed: set[str] = set()
        for board, result in zip(boards, self.index.changes(boards), strict=True):
            if isinstance(result, BoardChanges):
                if result.updates or result.player_updates:
                    changed.add(board.board_id)
                # every message names each standing's tier by the board's tiers as listed now
                tiers = board.tiering
                updates.extend(replace(u, tiering=tiers) for u in result.updates)
                updates.extend(
                    replace(u, tiering=tiers, league=board.league) for u in result.player_updates
                )
                report.player_messages += len(result.player_updates)
                report.entries_read += result.entries_read
                report.entries_skipped += result.skipped
            else:
                report.board_errors += 1
                report.note(f"board {board.board_id}: {type(result).__name__}: {result}")
        if not updates:
            return changed
        published_at = _iso_ms(now)
        outcomes = self._pool.map(lambda u: self._publish(u, published_at), updates)
        for outcome in outcomes:
            report.messages += 1
            report.truncated += outcome.truncated
            report.retried += outcome.retries
            if outcome.error is None:
                report.published += 1
                continue
            report.failed += 1
            report.refused += outcome.refused
            report.note(outcome.error)
        return changed

    def _publish(self, update: ChannelUpdate | PlayerUpdate, published_at: str) -> _Outcome:
        if isinstance(update, PlayerUpdate):  # ten passers at most: far below any size limit
            channel = update.name(self.player_namespace)
            text, truncated = _encode(update.to_message(published_at)), False
        else:
            channel = update.name(self.namespace)
            text, truncated = fit_message(update.to_message(published_at), _encode)
        if truncated:
            log.info("%s: message cut to the event size limit (truncated: true)", channel)
        retries = 0
        while True:
            try:
                self.publisher.publish(channel, [text])
            except Exception as exc:  # any failure of one channel stays with that channel
                status = getattr(exc, "status", None)
                throttled = status == 429 or (isinstance(status, int) and status >= 500)
                if throttled and retries < len(_RETRY_AFTER):
                    # the event API's rate limit or a passing fault: this message alone waits
                    self.sleep(_RETRY_AFTER[retries] * (0.5 + random.random()))
                    retries += 1
                    continue
                refused = isinstance(status, int) and 400 <= status < 500 and status != 429
                if refused:  # logged at once: subscribers of this channel now miss messages
                    log.error("publish to %s refused (%s): %s", channel, status, exc)
                return _Outcome(truncated, f"{type(exc).__name__}: {exc}", refused, retries)
            return _Outcome(truncated, retries=retries)

    # --- a run: woken by the writes until the deadline or a newer run asks to take over ------
    def run(
        self, owner: str, seconds: float, *, wait_for_successor: float = 0.0, lease_ms: int = 5000
    ) -> LiveReport:
        """Publish for `seconds`, then on for up to `wait_for_successor` more until the next
        run asks to take over, so the hand-over costs at most a moment even when that run is
        late (a cold start)."""
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
        listener = self.index.listener()
        serving_from = self.monotonic()
        serving = _Serving(self, listener, owner, lease_ms, report)
        try:
            serving.take_due(self.index.left_due())
            serving.serve(deadline)
        finally:
            report.served_ms = int((self.monotonic() - serving_from) * 1000)
            listener.close()
            try:  # the next run keeps each board's 1/rate from this one's last message
                self.index.leave_due(serving.due_ms(), lease_ms)
            except Exception as exc:
                report.note(f"due: {type(exc).__name__}: {exc}")
            try:
                self.index.release_lease(owner)
            except Exception as exc:  # the lease expires by itself
                report.note(f"release: {type(exc).__name__}: {exc}")
        return report


# A throttled publish (429) or an event API fault (5xx) is tried again after about these many
# seconds (jittered), then counted as failed: a message late by a fraction of a second is still
# worth sending, one later than the next message is not.
_RETRY_AFTER = (0.05, 0.15)


class _Serving:
    """One run's loop once it holds the lease: leading edge, then coalesce, per board.

    A board is either listened to (a write wakes the loop, and the board is read at once) or
    pending (a change is known and the board published less than 1/rate ago: it is read at the
    end of that interval, every change since folded into one message). So a quiet board's write
    is published as it lands and a hot board's channels get at most `rate` messages a second,
    each read costing what a tick cost before. Before a pending board is read it is listened to
    again, so a write after the read always wakes the loop. The lease, a waiting successor and
    the catalog are checked every 1/rate and every second as before, and at once when the
    control channel says so; a board not read for a second is read then too (`_sweep`).
    """

    def __init__(
        self,
        publisher: LivePublisher,
        listener: WakeListener,
        owner: str,
        lease_ms: int,
        report: LiveReport,
    ) -> None:
        self.publisher = publisher
        self.index = publisher.index
        self.listener = listener
        self.owner = owner
        self.lease_ms = lease_ms
        self.report = report
        self.boards: dict[str, dict[str, Any]] = {}  # board id -> its public object
        self.channels: dict[str, list[str]] = {}  # board id -> the channels its writes wake
        self.board_of: dict[str, str] = {}  # wake channel -> board id
        self.pending: set[str] = set()  # boards with a change not read yet
        self.due: dict[str, float] = {}  # board id -> when it may publish again (monotonic)
        self.read_at: dict[str, float] = {}  # board id -> its last read (monotonic)
        self.check_at = float("-inf")  # the lease and a successor
        self.catalog_at = float("-inf")

    def take_due(self, due_ms: dict[str, int]) -> None:
        """The next allowed message of each board a previous run left (epoch ms)."""
        now, wall = self.publisher.monotonic(), self.publisher.clock().timestamp()
        for board_id, at_ms in due_ms.items():
            if at_ms / 1000 > wall:
                self.due[board_id] = now + (at_ms / 1000 - wall)

    def due_ms(self) -> dict[str, int]:
        """Each board's next allowed message still to come, in epoch ms (for the next run)."""
        now, wall = self.publisher.monotonic(), self.publisher.clock().timestamp()
        return {
            board_id: int((wall + (at - now)) * 1000) + 1
            for board_id, at in self.due.items()
            if at > now
        }

    def serve(self, deadline: float) -> None:
        clock = self.publisher.monotonic
        interval = self.publisher.interval
        while clock() < deadline:
            # Every Redis call of an iteration is in here: a run must never sit out the rest of
            # its minute because Redis was down or frozen for a moment (docs/API.md: a live
            # board is back within 2 s of Redis answering again).
            try:
                now = clock()
                if now >= self.check_at:
                    held, successor = self.index.renew_lease(self.owner, self.lease_ms)
                    if successor:
                        self.report.handed_over = True
                        return
                    if not held:
                        self.report.note("lost the lease")  # another run holds it now
                        return
                    self.check_at = now + interval
                    self.report.ticks += 1
                if now >= self.catalog_at:
                    self._read_catalog()
                    self._sweep(now)
                    self.catalog_at = now + self.publisher.catalog_seconds
                self._publish_ready(clock())
                self._wait(deadline)
            except Exception as exc:  # Redis unreachable: go on, it may come back
                self.report.board_errors += 1
                self.report.note(f"serving: {type(exc).__name__}: {exc}")
                # nothing heard since can be trusted: listen anew and read every board once
                self.listener.reset()
                self.pending = set(self.boards)
                self.check_at = self.catalog_at = float("-inf")
                self.publisher.sleep(min(0.05, interval))

    def _read_catalog(self) -> None:
        self.listener.listen([LIVE_CONTROL_CHANNEL])
        boards = {b["board_id"]: b for b in self.index.catalog()}
        channels = {
            board_id: wake_channels(board_id, int(board.get("shards") or 1))
            for board_id, board in boards.items()
        }
        for board_id, old in self.channels.items():
            if channels.get(board_id) != old:  # gone, or sharded otherwise
                self.listener.ignore(old)
                self.pending.discard(board_id)
        self.pending |= {b for b in boards if channels[b] != self.channels.get(b)}  # new
        self.boards, self.channels = boards, channels
        self.board_of = {ch: board_id for board_id, chs in channels.items() for ch in chs}

    def _sweep(self, now: float) -> None:
        """Every board not read for the catalog's period is read once more: a wake-up lost
        without an error (a connection gone silent) then costs that long at most, and an idle
        board one script call a period (a tick-driven publisher made it `rate` a second)."""
        stale = now - self.publisher.catalog_seconds
        self.pending |= {b for b in self.boards if self.read_at.get(b, _NEVER) <= stale}

    def _publish_ready(self, now: float) -> None:
        ready = sorted(
            b for b in self.pending if b in self.boards and self.due.get(b, _NEVER) <= now
        )
        if not ready:
            return
        # listened to before the read: a write after the read wakes the loop again
        self.listener.listen(ch for b in ready for ch in self.channels[b])
        read_at = self.publisher.monotonic()
        changed = self.publisher.publish_boards([self.boards[b] for b in ready], self.report)
        self.pending.difference_update(ready)
        self.read_at.update(dict.fromkeys(ready, read_at))
        # a message's published_at is its read's start: the next read 1/rate after this one's
        for board_id in changed:
            self.due[board_id] = read_at + self.publisher.interval

    def _wait(self, deadline: float) -> None:
        upcoming = [self.due[b] for b in self.pending if b in self.due]
        wake_at = min([deadline, self.check_at, self.catalog_at, *upcoming])
        heard = self.listener.wait(max(0.0, wake_at - self.publisher.monotonic()))
        for channel, message in heard:
            if channel == LIVE_CONTROL_CHANNEL:
                self.check_at = float("-inf")  # a successor may be waiting
                if message == CATALOG_CHANGED:
                    self.catalog_at = float("-inf")
                continue
            board_id = self.board_of.get(channel)
            if board_id is None:
                continue
            self.pending.add(board_id)
            if self.due.get(board_id, _NEVER) > self.publisher.monotonic():
                # inside its interval: read at its end; until then its writes need not wake us
                self.listener.ignore(self.channels[board_id])


_NEVER = float("-inf")
