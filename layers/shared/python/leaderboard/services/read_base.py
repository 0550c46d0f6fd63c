"""What every read of the read service shares: the sources (the serving index, the archive, the
record while the index cannot answer), the reader a request is for, the board's custom
calendar, the envelope of an answer; the query parameters each route takes."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from leaderboard.domain.auth import Caller
from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.clock import Clock, system_clock
from leaderboard.domain.errors import (
    ArchivedPeriod,
    BadRequest,
    BoardMissing,
    Forbidden,
    NotFound,
    Unauthorized,
    Unavailable,
    Unprocessable,
)
from leaderboard.domain.leagues import League
from leaderboard.domain.periods import (
    ALL_TIME,
    CUSTOM,
    CUSTOM_ID_LENGTH,
    DAILY,
    MONTHLY,
    WEEKLY,
    Calendar,
    Period,
    is_custom_period_id,
    parse_period_id,
    resolve_period,
)
from leaderboard.domain.read_results import Entry, PeriodStanding, Selection, Window
from leaderboard.domain.score_tiers import Tiering, tier_field
from leaderboard.domain.validation import (
    PLAYER_ID_RE,
    require_board_id,
    require_region,
    require_team_id,
)
from leaderboard.stores.redis.serving_index import RedisIndex

if TYPE_CHECKING:
    from leaderboard.stores.postgres.archive_reads import ArchivedResult

MAX_WINDOW = 100
MAX_OFFSET = 999_999_999
Query = Mapping[str, str | None]
# by=team: a team board's teams; team=<id>: that team's members (docs/API.md, "Team boards")
_ENTRIES_PARAMS = {"period", "region", "offset", "limit", "around_rank", "viewer", "by", "team"}
_PLAYER_PARAMS = {"period", "region", "viewer", "by", "team"}
_AROUND_PARAMS = {"period", "region", "count", "viewer", "by", "team"}
_SECOND = timedelta(seconds=1)  # an end by hand takes effect at the next whole second
_PLAYERS_PARAMS = {"ids", "period", "region", "viewer", "by", "team"}
_STANDINGS_PARAMS = {"region", "viewer"}
_TOURNAMENTS_PARAMS = {"status"}
_HISTORY_PARAMS = {"kind", "region", "limit", "before", "viewer", "by"}
ARCHIVED_KINDS = (DAILY, WEEKLY, MONTHLY, CUSTOM)
# How long a read function trusts the custom periods of a board it looked up: an end by hand
# reaches reads of `period=custom` within this (writes learn of it at once: docs/API.md).
CALENDAR_SECONDS = 5.0
T = TypeVar("T")


class WindowSource(Protocol):
    """Anything that serves a window of a board: the archive, the record in degraded mode."""

    def window(
        self,
        board_id: str,
        period: Period,
        region: str | None,
        *,
        op: str,
        size: int,
        offset_or_rank: int = 0,
        player_id: str = "",
        viewer: str = "",
        ranks: str = "",
    ) -> Window: ...

    def players(
        self,
        board_id: str,
        period: Period,
        region: str | None,
        player_ids: list[str],
        viewer: str = "",
        ranks: str = "",
    ) -> Selection: ...


class ReadModel(WindowSource, Protocol):
    """What serves reads when the index cannot: PostgreSQL in degraded mode."""

    def list_boards(self) -> list[dict[str, Any]]: ...

    def get_board(self, board_id: str) -> dict[str, Any] | None: ...

    def standings(
        self,
        board_id: str,
        player_id: str,
        periods: list[Period],
        region: str | None,
        viewer: str = "",
    ) -> list[PeriodStanding]: ...


class History(Protocol):
    """Archived results of players (the archive in PostgreSQL)."""

    def history(
        self,
        board_id: str,
        player_id: str,
        kind: str,
        region: str | None,
        before: str | None,
        limit: int,
        viewer: str = "",
    ) -> list[ArchivedResult]: ...

    def team_history(
        self,
        board_id: str,
        team_id: str,
        kind: str,
        region: str | None,
        before: str | None,
        limit: int,
    ) -> list[ArchivedResult]: ...


class ArchiveSource(WindowSource, History, Protocol):
    """The archive: windows and chosen players of archived periods, and players' histories."""


class ReadBase:
    """Reads from the serving index; from the system of record while the index can't answer.

    `fallback` builds the PostgreSQL read model on first need, so a healthy read function
    never imports the database driver. After the index fails, reads go straight to the
    fallback for `bypass_seconds` instead of waiting on a dead server each time.
    """

    def __init__(
        self,
        index: RedisIndex,
        clock: Clock = system_clock,
        fallback: Callable[[], ReadModel] | None = None,
        bypass_seconds: float = 5.0,
        archive: Callable[[], ArchiveSource] | None = None,
    ) -> None:
        self.index = index
        self.clock = clock
        self._fallback_factory = fallback
        self._fallback: ReadModel | None = None
        self._bypass_until = 0.0
        self.bypass_seconds = bypass_seconds
        self._archive_factory = archive
        self._archive: ArchiveSource | None = None
        # An archived period never changes: its windows are cached for the environment's life.
        self._archived_window = functools.lru_cache(maxsize=4096)(self._read_archive)
        self._calendars: dict[str, tuple[float, Calendar | None]] = {}
        self._leagues: dict[str, tuple[float, League | None]] = {}  # league_reads.py

    def _read_archive(
        self,
        board_id: str,
        period_id: str,
        region: str | None,
        op: str,
        size: int,
        offset_or_rank: int,
        player_id: str,
        viewer: str,
        ranks: str,
    ) -> Window:
        return self._archive_model().window(
            board_id,
            parse_period_id(period_id),
            region,
            op=op,
            size=size,
            offset_or_rank=offset_or_rank,
            player_id=player_id,
            viewer=viewer,
            ranks=ranks,
        )

    def _archive_model(self) -> ArchiveSource:
        if self._archive is None:
            assert self._archive_factory is not None
            self._archive = self._archive_factory()
        return self._archive

    def _degraded_model(self) -> ReadModel:
        if self._fallback is None:
            assert self._fallback_factory is not None
            self._fallback = self._fallback_factory()
        return self._fallback

    def _served(
        self,
        from_index: Callable[[RedisIndex], T],
        from_record: Callable[[ReadModel], T],
        from_archive: Callable[[Tiering | None], T] | None = None,
    ) -> tuple[T, bool]:
        """(answer, degraded): the index first; the archive for a period whose keys were freed
        (given the board's score tiers, as the index found them: the archive keeps none); the
        system of record while the index cannot answer or lost the board."""
        if self._fallback_factory is not None and time.monotonic() < self._bypass_until:
            return from_record(self._degraded_model()), True
        try:
            return from_index(self.index), False
        except ArchivedPeriod as archived:
            if self._archive_factory is None or from_archive is None:
                raise
            return from_archive(archived.tiering), False
        except Unavailable:
            if self._fallback_factory is None:
                raise
            self._bypass_until = time.monotonic() + self.bypass_seconds
        except BoardMissing:
            # Unknown board, or one whose serving data was lost: the record decides.
            if self._fallback_factory is None:
                raise
        return from_record(self._degraded_model()), True

    def _window(
        self, board_id: str, period: Period, region: str | None, **kwargs: Any
    ) -> tuple[Window, bool]:
        return self._served(
            lambda index: index.window(board_id, period, region, **kwargs),
            lambda record: record.window(board_id, period, region, **kwargs),
            lambda tiering: replace(  # cached for good; the tiers, a view, may change
                self._archived_window(
                    board_id,
                    period.id,
                    region,
                    kwargs["op"],
                    kwargs["size"],
                    kwargs.get("offset_or_rank", 0),
                    kwargs.get("player_id", ""),
                    kwargs.get("viewer", ""),
                    kwargs.get("ranks", ""),
                ),
                tiering=tiering,
            ),
        )

    @staticmethod
    def _reader(caller: Caller | None, query: Query, path_player: str = "") -> Reader:
        """Who reads, and what: players (the default), a team board's teams (`by=team`) or
        one team's members (`team=<id>`)."""
        by, team = query.get("by"), query.get("team")
        if by not in (None, "player", "team"):
            raise BadRequest("by must be player or team", field="by")
        ranks = ""
        if by == "team":
            if team is not None:  # each well-formed (400 first), but not together: 422
                require_team_id(team, "team")
                raise Unprocessable("use by=team or team=<id>, not both", field="team")
            ranks, path_player = "teams", ""  # the path names a team, never the reader
        elif team is not None:
            ranks = "members:" + require_team_id(team, "team")
        who = ReadBase._who(caller, query, path_player)
        return Reader(who.player, who.privileged, ranks)

    @staticmethod
    def _who(caller: Caller | None, query: Query, path_player: str = "") -> Reader:
        """Who the read is for. A hidden player sees the board with their own entry in it;
        everyone else sees it without them. A player's token reads as that player; a server or
        admin token reads as the `viewer` it names (a game server reading for a player), else
        as the player the route names, and is told which entry is hidden."""
        privileged = caller is not None and caller.is_server
        raw = query.get("viewer")
        if raw is not None:
            if caller is None:
                raise Unauthorized("viewer needs a bearer token", field="viewer")
            viewer = raw
            if not PLAYER_ID_RE.fullmatch(viewer):
                raise BadRequest("viewer must match ^[A-Za-z0-9_.:@-]{1,64}$", field="viewer")
            if not privileged and viewer != caller.subject:
                raise Forbidden("a player token may only read as its own player", field="viewer")
            return Reader(viewer, privileged)
        if caller is None:
            return Reader("", False)
        return Reader(path_player if privileged else caller.subject, privileged)

    def _envelope_of(
        self,
        reader: Reader,
        board_id: str,
        period: Period,
        region: str | None,
        total: int,
        degraded: bool,
    ) -> dict[str, Any]:
        body = self._envelope(board_id, period, region, total, degraded)
        if reader.ranks == "teams":
            body["by"] = "team"
        elif reader.ranks:
            body["team_id"] = reader.ranks[8:]
        return body

    def _calendar(self, board_id: str) -> Calendar | None:
        """The board's custom periods, as looked up at most CALENDAR_SECONDS ago."""
        now = time.monotonic()
        cached = self._calendars.get(board_id)
        if cached is not None and cached[0] > now:
            return cached[1]
        calendar = BoardConfig.from_public(self.get_board(board_id)).calendar()
        self._remember_calendar(board_id, calendar)
        return calendar

    def _remember_calendar(self, board_id: str, calendar: Calendar | None) -> None:
        if len(self._calendars) > 4096:
            self._calendars.clear()
        self._calendars[board_id] = (time.monotonic() + CALENDAR_SECONDS, calendar)

    def _placed(self, board_id: str, period: Period) -> Period:
        """A custom period (`custom`, or an id) with its bounds on this board. An id is exact at
        once: one that may have started since the calendar was looked up (a season ended by
        hand a moment ago) has it looked up again before it is called unknown."""
        if period.kind != CUSTOM:
            return period
        calendar = self._calendar(board_id)
        if calendar is None:
            raise NotFound(
                f"board {board_id!r} keeps no custom periods", board_id=board_id, period=period.id
            )
        now = self.clock()
        try:
            return calendar.resolve(period, now)
        except NotFound:
            start = period.starts_at
            current = calendar.period_at(now).starts_at
            if start is None or current is None or not current < start <= now + _SECOND:
                raise  # before the current one, or not begun: the calendar knew it
            self._calendars.pop(board_id, None)
            fresh = self._calendar(board_id)
            if fresh is None:
                raise
            return fresh.resolve(period, now)

    def _scope(self, board_id: str, query: Query) -> tuple[str, Period, str | None]:
        board_id = require_board_id(board_id)
        period = self._placed(board_id, resolve_period(query.get("period"), self.clock()))
        raw_region = query.get("region")
        region = None if raw_region in (None, "") else require_region(raw_region)
        return board_id, period, region

    def _require_data(self, board_id: str, period: Period, total: int) -> None:
        """A past or future period with no entries is unknown (404); the open one is just empty,
        and so is the season an end by hand starts at the next whole second: the end's answer
        named it, and a read of it must not say it is unknown."""
        if total or period.kind == ALL_TIME:
            return
        now = self.clock()
        if period.is_open_at(now):
            return
        start = period.starts_at
        if period.kind == CUSTOM and start is not None and now < start <= now + _SECOND:
            cached = self._calendars.get(board_id)
            if cached is not None and cached[1] is not None and start in cached[1].ends:
                return
        raise NotFound(f"no data for period {period.id}", period=period.id)

    @staticmethod
    def _envelope(
        board_id: str, period: Period, region: str | None, total: int, degraded: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "board_id": board_id,
            "period": period.id,
            "region": region,
            "total": total,
        }
        if degraded:
            body["degraded"] = True  # served from the system of record during an outage
        return body

    def get_board(self, board_id: str, *, caller: Caller | None = None) -> dict[str, Any]:
        """One board's public rules. `caller` is who reads (anonymous: None)."""
        board_id = require_board_id(board_id)
        try:
            board = self.index.get_board(board_id)
        except Unavailable:
            if self._fallback_factory is None:
                raise
            board = None
        if board is None and self._fallback_factory is not None:
            board = self._degraded_model().get_board(board_id)
        if board is None:
            raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
        return board


@dataclass(frozen=True, slots=True)
class Reader:
    """Who a read is for: `player` ("": nobody in particular) sees their own entry even when
    the board hides them; a `privileged` reader (a server or admin token) is told so."""

    player: str
    privileged: bool
    ranks: str = ""  # what is read: "" players, "teams", "members:<team>" (BoardKeys.ranked)

    def flag(self, hidden: bool) -> dict[str, bool]:
        """`hidden: true` on the reader's own hidden entry, for server and admin readers only:
        a hidden player is never told."""
        return {"hidden": True} if hidden and self.privileged else {}

    def entry(self, entry: Entry, tiering: Tiering | None, total: int) -> dict[str, Any]:
        """An entry of a read counting `total` entries: every read's entries are written
        here, each with its `tier` when the board has score tiers (docs/API.md, "Score tiers")."""
        tier = tier_field(tiering, entry.rank, entry.score, total)
        if self.ranks == "teams":  # a team: no metadata, no tie-breakers
            return {"rank": entry.rank, "team_id": entry.player_id, "score": entry.score} | tier
        return entry.to_json() | tier | self.flag(entry.hidden)


def _is_period_of(value: str, kind: str) -> bool:
    try:
        if kind == CUSTOM:  # a bound in id order: any text of a custom id's shape
            return is_custom_period_id(value)
        return len(value) <= CUSTOM_ID_LENGTH and parse_period_id(value).kind == kind
    except (BadRequest, Unprocessable):
        return False


def _iso(moment: Any) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def top_percent(rank: int, total: int) -> float:
    """100 x rank / total, rounded to 4 decimals so it reads well and compares exactly."""
    return round(100.0 * rank / total, 4)
