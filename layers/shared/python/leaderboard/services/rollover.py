"""The rollover: archive every closed period, then free its serving keys after a retention.

For each board and each closed period still in the serving index, the final standings of the
global board and every regional board are copied in rank order, in chunks, into the archive
(then the entries of hidden players, apart, each where its player saw it, and on a team board
its team ranking and each team's members);
the snapshot is checked against the persisted standings (differences are reported, not
hidden); the period is marked archived, and after `retention` its sorted sets are removed.

Idempotent (an archived period is skipped) and resumable: a run that ran out of time stops
between chunks, and the next run continues after the last stored position. A closed period's
keys receive no more writes, so every run sees the same snapshot.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta

from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.clock import Clock, system_clock
from leaderboard.domain.errors import BadRequest, NotFound, Unavailable, Unprocessable
from leaderboard.domain.period_events import PeriodEnded
from leaderboard.domain.periods import (
    ALL_TIME,
    CUSTOM,
    Period,
    Windows,
    current_period,
    is_custom_period_id,
    parse_period_id,
)
from leaderboard.domain.read_results import Entry
from leaderboard.stores.aws.event_bus import PeriodEventSink
from leaderboard.stores.postgres.archive import ArchiveStore
from leaderboard.stores.postgres.boards import BoardRepository
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.serving_index import RedisIndex

log = logging.getLogger("leaderboard.rollover")
# A day, week or month is archived this long after it ends (the schedules' 00:05 UTC): the
# queue delivers the period's last events to PostgreSQL first, so the archive's check against
# the record sees them.
FIXED_GRACE = timedelta(minutes=5)


def _later(moment: datetime | None, by: timedelta) -> datetime | None:
    return None if moment is None else moment + by


EVENT_CHUNK = 1000  # entries per read while building a period.ended event


@dataclass
class RolloverReport:
    boards: int = 0
    archived: list[str] = field(default_factory=list)
    entries: int = 0
    differences: int = 0
    purged: list[str] = field(default_factory=list)
    complete: bool = True
    seconds: float = 0.0

    def to_json(self) -> dict[str, object]:
        return asdict(self)


class OutOfTime(Exception):
    """Stop between chunks; the next run resumes."""


class Rollover:
    def __init__(
        self,
        db: Database,
        index: RedisIndex,
        clock: Clock = system_clock,
        *,
        chunk_size: int = 5000,
        retention: timedelta = timedelta(days=7),
        sink: PeriodEventSink | None = None,
    ) -> None:
        """`sink`: where each closed period's period.ended event goes (None: nowhere)."""
        self.db = db
        self.index = index
        self.archive = ArchiveStore(db)
        self.boards = BoardRepository(db)
        self.clock = clock
        self.chunk_size = chunk_size
        self.retention = retention
        self.sink = sink

    def run(
        self,
        kinds: set[str] | None = None,
        keep_going: Callable[[], bool] = lambda: True,
        board_ids: set[str] | None = None,
        *,
        due: bool = False,
    ) -> RolloverReport:
        """Archive closed periods (of `kinds`, or all; of `board_ids`, or every board); stops
        between chunks when keep_going() turns false. `due`: only the boards whose custom
        periods have work now (RedisIndex.rollover_due), so a run every minute costs what
        closes, not what exists."""
        started = time.perf_counter()
        report = RolloverReport()
        now = self.clock()
        try:
            if due:
                ids = self.index.rollover_due(now)
                boards = [b for b in (self.boards.get(i) for i in ids) if b is not None]
                for gone in set(ids) - {b.board_id for b in boards}:
                    self.index.rollover_due_at(gone, None)  # a board no longer in the record
            else:
                boards = self.boards.all()
            for board in boards:
                if board_ids is not None and board.board_id not in board_ids:
                    continue
                report.boards += 1
                self._board(board, now, kinds, keep_going, report)
        except OutOfTime:
            report.complete = False
            log.info("rollover stopped for time; the next run resumes")
        report.seconds = round(time.perf_counter() - started, 3)
        return report

    def _board(
        self,
        board: BoardConfig,
        now: datetime,
        kinds: set[str] | None,
        keep_going: Callable[[], bool],
        report: RolloverReport,
    ) -> None:
        _, sets, archived = self.index.period_sets(board.board_id)
        regions: dict[str, list[str]] = defaultdict(list)
        for suffix in sets:
            period_id, _, region = suffix.partition(":")
            if period_id != ALL_TIME:
                regions[period_id].append(region)
        calendar = board.calendar()
        # When this board next needs a run: the end of each current period it keeps (a fixed
        # kind's a few minutes later, as its schedule ran: the queue's last events land
        # first), and the end of the retention of each archived one whose keys are held.
        next_due: list[datetime | None] = [
            calendar.due_after(now)
            if kind == CUSTOM and calendar is not None
            else _later(current_period(kind, now).ends_at, FIXED_GRACE)
            for kind in board.periods
            if kind != ALL_TIME and (kind != CUSTOM or calendar is not None)
        ]
        for period_id in sorted(regions):
            try:
                period = parse_period_id(period_id)
                if period.kind == CUSTOM:
                    if calendar is None:
                        continue
                    period = calendar.place(period)
            except (BadRequest, Unprocessable, NotFound):
                continue
            if (kinds and period.kind not in kinds) or period.is_open_at(now):
                continue
            if period_id not in archived:
                self._archive(board, period, sorted(regions[period_id]), now, keep_going, report)
                next_due.append(now + self.retention)
            else:
                state = self.archive.state(board.board_id, period_id)
                if state and state["archived_at"] and state["archived_at"] + self.retention <= now:
                    self._purge(board, period_id, regions[period_id], now, keep_going, report)
                elif state and state["archived_at"]:
                    next_due.append(state["archived_at"] + self.retention)
        if not kinds:
            _settle_unplayed_season(self.index, board, now, set(regions), keep_going)
        if isinstance(calendar, Windows):
            _drop_windows(self.index, board, calendar, now, set(regions), set(archived), report)
        self.index.rollover_due_at(
            board.board_id, min((d for d in next_due if d is not None), default=None)
        )

    def _archive(
        self,
        board: BoardConfig,
        period: Period,
        regions: list[str],
        now: datetime,
        keep_going: Callable[[], bool],
        report: RolloverReport,
    ) -> None:
        board_id = board.board_id
        self.archive.begin(board_id, period)
        hidden = self.index.hidden_players(board_id)
        for region in regions:  # '' (the global board) sorts first
            report.entries += self._archive_ranked(board_id, period, region, "", keep_going)
            if hidden:
                self._archive_hidden(board_id, period, region, hidden)
            if board.teams is not None:
                self._archive_ranked(board_id, period, region, "teams", keep_going)
                for team in self.archive.ranked_ids(board_id, period.id, region):
                    self._archive_ranked(board_id, period, region, f"members:{team}", keep_going)
        entries, differences = self.archive.finish(board_id, period.id, now)
        # Promotion and relegation, before the season counts as archived: a run that stops
        # here settles it again from its closed groups, to the same moves.
        if (
            board.league is not None
            and period.kind == CUSTOM
            and not self.index.settle_season(
                board_id, period.id, board.league.group_size, keep_going
            )
        ):
            raise OutOfTime
        if self.sink is not None:
            # Before the period counts as archived: a run that dies here archives it again
            # and emits the same event, same id, same bytes (PeriodEnded.event_id).
            try:
                for event in self._events(board, period, entries):
                    self.sink.emit(event)
            except Unavailable:
                log.exception(
                    "period.ended of %s %s not sent; the next run retries", board_id, period.id
                )
                report.complete = False
                return
        self.index.mark_archived(board_id, period.id, entries)
        if board.league is not None and period.kind == CUSTOM:
            self.index.forget_moves(board_id, period.id)  # sent: the moves are in the events
        report.archived.append(f"{board_id}/{period.id}")
        report.differences += differences
        if differences:
            log.warning(
                "archive of %s %s differs from the persisted standings in %d rows",
                board_id,
                period.id,
                differences,
            )
        log.info("archived %s %s: %d entries", board_id, period.id, entries)

    def _events(self, board: BoardConfig, period: Period, total: int) -> Iterator[PeriodEnded]:
        """The period.ended event, in parts carrying every player's move on a league's
        season."""
        return _with_moves(self.index, board, period, self._ended(board, period, total))

    def _ended(self, board: BoardConfig, period: Period, total: int) -> PeriodEnded:
        """The period.ended event: the final global board, as archived, read only as deep as
        the board's rewards need."""
        by_hand = period.ends_at is not None and (
            period.ends_at.strftime("%Y-%m-%dT%H:%M:%SZ") in board.ended_by_hand
        )

        def ranked() -> Iterator[Entry]:
            start = 0
            while True:
                window = self.index.window(
                    board.board_id, period, None, op="page", size=EVENT_CHUNK, offset_or_rank=start
                )
                yield from window.entries
                if len(window.entries) < EVENT_CHUNK:
                    return
                start += len(window.entries)

        return PeriodEnded.build(
            board.board_id,
            period,
            reason="tournament"
            if board.tournament is not None
            else "manual"
            if by_hand
            else "schedule",
            total=total,
            entries=ranked(),
            rewards=board.rewards,
        )

    def _archive_ranked(
        self,
        board_id: str,
        period: Period,
        region: str,
        ranks: str,
        keep_going: Callable[[], bool],
    ) -> int:
        """One board's players (ranks ""), a team ranking ("teams") or one team's members
        ("members:<team>"), in chunks from where a previous run stopped: how many this run
        stored."""
        start = self.archive.stored(board_id, period.id, region, ranks)
        stored = 0
        while True:
            if not keep_going():
                raise OutOfTime
            window = self.index.window(
                board_id,
                period,
                region or None,
                op="page",
                size=self.chunk_size,
                offset_or_rank=start,
                ranks=ranks,
            )
            if window.entries:
                self.archive.append(board_id, period.id, region, start, window.entries, ranks)
                start += len(window.entries)
                stored += len(window.entries)
                log.info(
                    "archiving %s %s%s%s: %d of %d",
                    board_id,
                    period.id,
                    f" {region}" if region else "",
                    f" ({ranks})" if ranks else "",
                    start,
                    window.total,
                )
            if len(window.entries) < self.chunk_size:
                return stored

    def _archive_hidden(
        self, board_id: str, period: Period, region: str, hidden: list[str]
    ) -> None:
        """The hidden players' entries of one board, each with the rank and place its player
        saw (their own view), kept apart from the public board."""
        rows = []
        for player in hidden:
            try:
                window = self.index.window(
                    board_id,
                    period,
                    region or None,
                    op="player",
                    size=1,
                    player_id=player,
                    viewer=player,
                )
            except NotFound:
                continue  # no entry on this board
            if window.entries and window.entries[0].hidden:
                rows.append((window.entries[0], window.start))
        if rows:
            rows.sort(key=lambda row: row[1])
            self.archive.append_hidden(board_id, period.id, region, rows)

    def _purge(
        self,
        board: BoardConfig,
        period_id: str,
        regions: list[str],
        now: datetime,
        keep_going: Callable[[], bool],
        report: RolloverReport,
    ) -> None:
        for region in regions:
            suffix = BoardKeys.suffix(period_id, region or None)
            while board.teams is not None and self.index.purge_teams(
                board, suffix, self.chunk_size
            ):
                if not keep_going():
                    raise OutOfTime
            while self.index.purge_chunk(board, suffix, self.chunk_size) > 0:
                if not keep_going():
                    raise OutOfTime
        if board.league is not None and is_custom_period_id(period_id):
            self.index.drop_season(board.board_id, period_id, len(board.league.tiers))
        self.archive.mark_purged(board.board_id, period_id, now)
        report.purged.append(f"{board.board_id}/{period_id}")
        log.info("freed the serving keys of %s %s", board.board_id, period_id)


def _with_moves(
    index: RedisIndex, board: BoardConfig, period: Period, ended: PeriodEnded
) -> Iterator[PeriodEnded]:
    """A league season's period.ended in parts, with every player's move (by player id);
    else as it is."""
    league = board.league
    if league is None or period.kind != CUSTOM:
        yield ended
        return
    moves = sorted(index.season_moves(board.board_id, period.id), key=lambda m: m.player_id)
    yield from ended.in_parts(moves, lambda m: m.to_json(league))


def _settle_unplayed_season(
    index: RedisIndex,
    board: BoardConfig,
    now: datetime,
    held: set[str],
    keep_going: Callable[[], bool],
) -> None:
    """A league season nobody played holds no set to archive (`held`: the periods that do):
    once it has ended, its idle players' moves still apply (stay, or drop a tier)."""
    if board.league is None:
        return
    calendar = board.calendar()
    if calendar is None:
        return
    last = calendar.previous(calendar.period_at(now))
    if last is None or last.id in held:
        return
    if not index.settle_season(board.board_id, last.id, board.league.group_size, keep_going):
        raise OutOfTime


def _drop_windows(
    index: RedisIndex,
    board: BoardConfig,
    windows: Windows,
    now: datetime,
    played: set[str],
    archived: set[str],
    report: RolloverReport,
) -> None:
    """A recurring tournament's sign-ups and attempts of each window that is over, once it
    is archived (a window no one played has nothing to archive): none left behind however
    many windows pass."""
    board_id = board.board_id
    for window_id in sorted(index.tournament_windows(board_id)):
        try:
            window = windows.place(parse_period_id(window_id))
        except (BadRequest, Unprocessable, NotFound):
            window = None  # no window of these rules: nothing will ever count on it
        if window is not None and window.ends_at is not None and now < window.ends_at:
            continue  # open, or upcoming (signed up for between windows)
        done = window_id in archived or f"{board_id}/{window_id}" in report.archived
        if window is not None and window_id in played and not done:
            continue  # not archived yet (out of time, or its event not sent): later
        index.drop_tournament_window(board_id, window_id)
        log.info("removed the sign-ups and attempts of %s %s", board_id, window_id)
