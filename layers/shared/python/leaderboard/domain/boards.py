"""Board configuration: what a board ranks, how, and which rules a submission must pass."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from leaderboard.domain.errors import BadRequest, Conflict, Unprocessable
from leaderboard.domain.hooks import HookConfig, parse_hook_field
from leaderboard.domain.leagues import League
from leaderboard.domain.live import DEFAULT_LIVE_TOP, MAX_LIVE_TOP, board_channel
from leaderboard.domain.period_events import Rewards, parse_rewards
from leaderboard.domain.periods import (
    ALL_TIME,
    BOARD_PERIOD_KINDS,
    CUSTOM,
    KEPT_ENDS,
    WEEKLY,
    Calendar,
    Windows,
    current_period,
)
from leaderboard.domain.schedules import Schedule
from leaderboard.domain.score_tiers import ScoreTiers, Tiering
from leaderboard.domain.shards import MAX_SHARDS
from leaderboard.domain.tiebreakers import TieBreaker, parse_columns, script_spec
from leaderboard.domain.tournaments import Tournament, tournament_calendar, tournament_script_config
from leaderboard.domain.validation import (
    REGION_RE,
    known_fields,
    require_board_id,
    require_int,
    require_score,
)

SORTS = ("desc", "asc")
MODES = ("increment", "best", "set")
TIES = ("shared", "first")
# Team rankings beside the players': a team's score is the sum of what its members' submissions
# added to their entries, or the best of their entries (docs/API.md, "Team boards").
TEAM_AGGREGATES = ("sum", "best")
MAX_REGIONS = 32
MAX_ENTRIES_LIMIT = 10_000_000
MAX_RATE_PER_MINUTE = 100_000
# Once a board has entries these would silently change the meaning of stored scores.
IMMUTABLE_WITH_ENTRIES = (
    "sort",
    "mode",
    "ties",
    "periods",
    "shards",
    "tiebreakers",
    "teams",
    "schedule",
    "tournament",
    "league",
)


@dataclass(frozen=True, slots=True)
class BoardConfig:
    board_id: str
    title: str | None = None
    sort: str = "desc"
    mode: str = "increment"
    periods: tuple[str, ...] = (ALL_TIME, WEEKLY)
    ties: str = "shared"
    max_entries: int | None = None
    min_score: int | float | None = None
    max_score: int | float | None = None
    max_increment: int | float | None = None
    regions: tuple[str, ...] | None = None
    rate_limit_per_minute: int | None = None
    live_top: int = DEFAULT_LIVE_TOP
    # Players spread over this many sorted sets (leaderboard/domain/shards.py).
    shards: int = 1
    # Integer columns ordering equal scores, in order (leaderboard/domain/tiebreakers.py).
    tiebreakers: tuple[TieBreaker, ...] = ()
    # Called before each submission is applied (leaderboard/domain/hooks.py); None: no hook.
    validation_hook: HookConfig | None = None
    # Team rankings: "sum" or "best" (TEAM_AGGREGATES); None: the board ranks players only.
    teams: str | None = None
    # When the `custom` periods end (leaderboard/domain/schedules.py); None: no custom periods.
    schedule: Schedule | None = None
    # Instants (ISO 8601, UTC) an admin ended the current custom period at, oldest first: the
    # newest KEPT_ENDS (POST /boards/{id}/periods/end).
    ended_by_hand: tuple[str, ...] = ()
    # What each period.ended event of the board lists (leaderboard/domain/period_events.py);
    # None: the default, the top 10 and no tiers.
    rewards: Rewards | None = None
    # A time-boxed competition (leaderboard/domain/tournaments.py): its one period, `custom`,
    # is its window. None: not a tournament.
    tournament: Tournament | None = None
    # Groups within tiers, promotion and relegation every season (leaderboard/domain/leagues.py).
    # None: no league.
    league: League | None = None
    # Named bands of the standings every read names (leaderboard/domain/score_tiers.py); a view
    # that may change at any time. None: no tiers, and no `tier` on any standing.
    score_tiers: ScoreTiers | None = None
    created_at: str = ""
    updated_at: str = ""
    version: int = 1
    extra: dict[str, Any] = field(default_factory=dict, compare=False)

    def to_public(self) -> dict[str, Any]:
        """The board object of the API contract."""
        data = asdict(self)
        data.pop("extra")
        data.pop("version")
        data["periods"] = list(self.periods)
        data["regions"] = list(self.regions) if self.regions is not None else None
        data["tiebreakers"] = [c.to_public() for c in self.tiebreakers]
        data["live_channel"] = board_channel(self.board_id)
        data["schedule"] = self.schedule.to_json() if self.schedule is not None else None
        data["ended_by_hand"] = list(self.ended_by_hand)
        data["rewards"] = self.rewards.to_json() if self.rewards is not None else None
        data["tournament"] = self.tournament.to_json() if self.tournament is not None else None
        data["league"] = self.league.to_json() if self.league is not None else None
        data["score_tiers"] = self.score_tiers.to_json() if self.score_tiers is not None else None
        return data

    def tiering(self) -> Tiering | None:
        """What a read needs to name each standing's tier (None: the board has no tiers)."""
        if self.score_tiers is None:
            return None
        return Tiering(self.score_tiers, self.sort == "desc")

    def calendar(self) -> Calendar | None:
        """Where this board's custom periods start and end (None: it keeps none)."""
        if self.tournament is not None:
            return tournament_calendar(self.tournament, self.created_at)
        return board_calendar(self.schedule, self.created_at, self.ended_by_hand)

    def current_period_id(self, kind: str, now: datetime) -> str:
        """The id of the period of `kind` open at `now` (a custom kind by the board's calendar)."""
        if kind == CUSTOM:
            calendar = self.calendar()
            assert calendar is not None, "a board that keeps custom periods has a calendar"
            return calendar.period_at(now).id
        return current_period(kind, now).id

    def to_script_config(self) -> dict[str, Any]:
        """The compact form the Redis scripts read; null rules are left out."""
        cfg: dict[str, Any] = {
            "sort": self.sort,
            "mode": self.mode,
            "ties": self.ties,
            "periods": list(self.periods),
            "v": self.version,
        }
        if self.shards > 1:
            cfg["shards"] = self.shards
        if self.tiebreakers:
            cfg["tb"] = script_spec(self.tiebreakers, self.sort)
        if self.validation_hook is not None:
            # The write path learns of the hook from the rules it caches (the scripts skip it).
            cfg["hook"] = self.validation_hook.to_json()
        if self.teams is not None:
            cfg["teams"] = self.teams
        if self.league is not None:
            cfg["lg"] = {"rules": self.league.script_rules(), "tiers": list(self.league.tiers)}
        tiering = self.tiering()
        if tiering is not None:  # the reads hand it back with the standings (the writes skip it)
            cfg["tiers"] = tiering.to_script()
        if self.tournament is not None:
            cfg.update(tournament_script_config(self.tournament, self.created_at))
        elif self.schedule is not None:
            # The write path places a submission's custom period with these (the scripts skip
            # them); an end by hand changes the text, so every cached copy goes stale at once.
            cfg["sched"] = self.schedule.to_json()
            cfg["since"] = self.created_at
            if self.ended_by_hand:
                cfg["ends"] = list(self.ended_by_hand)
        optional = {
            "regions": list(self.regions) if self.regions else None,
            "max_entries": self.max_entries,
            "min": self.min_score,
            "max": self.max_score,
            "max_inc": self.max_increment,
            "rate": self.rate_limit_per_minute,
        }
        cfg.update({k: v for k, v in optional.items() if v is not None})
        return cfg

    @classmethod
    def from_public(cls, data: dict[str, Any]) -> BoardConfig:
        """Rebuild from the stored board object (already validated when it was written)."""
        return cls(
            board_id=data["board_id"],
            title=data.get("title"),
            sort=data.get("sort", "desc"),
            mode=data.get("mode", "increment"),
            periods=tuple(data.get("periods") or (ALL_TIME, WEEKLY)),
            ties=data.get("ties", "shared"),
            max_entries=data.get("max_entries"),
            min_score=data.get("min_score"),
            max_score=data.get("max_score"),
            max_increment=data.get("max_increment"),
            regions=tuple(data["regions"]) if data.get("regions") else None,
            rate_limit_per_minute=data.get("rate_limit_per_minute"),
            live_top=int(data.get("live_top", DEFAULT_LIVE_TOP)),
            shards=int(data.get("shards", 1)),
            tiebreakers=parse_columns(data.get("tiebreakers")),
            validation_hook=HookConfig.from_json(data.get("validation_hook")),
            teams=data.get("teams"),
            schedule=Schedule.parse(data["schedule"]) if data.get("schedule") else None,
            ended_by_hand=tuple(data.get("ended_by_hand") or ()),
            rewards=parse_rewards(data["rewards"]) if data.get("rewards") is not None else None,
            tournament=Tournament.parse(data["tournament"]) if data.get("tournament") else None,
            league=League.parse(data["league"]) if data.get("league") else None,
            score_tiers=ScoreTiers.parse(data["score_tiers"]) if data.get("score_tiers") else None,
            created_at=data.get("created_at", ""),
            updated_at=data.get("updated_at", ""),
            version=int(data.get("version", 1)),
        )


_FIELDS = (
    "title",
    "sort",
    "mode",
    "periods",
    "ties",
    "max_entries",
    "min_score",
    "max_score",
    "max_increment",
    "regions",
    "rate_limit_per_minute",
    "live_top",
    "shards",
    "tiebreakers",
    "validation_hook",
    "teams",
    "schedule",
    "rewards",
    "tournament",
    "league",
    "score_tiers",
)


def board_calendar(
    schedule: Schedule | None,
    created_at: str,
    ended_by_hand: Collection[str],
    final: bool = False,
) -> Calendar | None:
    """A board's Calendar from its stored fields (also from the scripts' cfg: sched, since,
    ends, final)."""
    if schedule is None:
        return None
    return Calendar(
        schedule,
        _instant(created_at),
        tuple(_instant(text) for text in ended_by_hand),
        final,
    )


def script_calendar(cfg: dict[str, Any]) -> Calendar | None:
    """A board's Calendar from the rules the scripts keep (`to_script_config`: sched, since,
    ends, final; a recurring tournament's every, until), the one reading of them for the write
    path and the reads alike."""
    if not cfg.get("sched"):
        return None
    if cfg.get("every"):
        return Windows(
            Schedule.parse(cfg["sched"]),
            _instant(cfg["since"]),
            length=timedelta(seconds=int(cfg["every"])),
            until=_instant(cfg["until"]) if cfg.get("until") else None,
        )
    return board_calendar(
        Schedule.parse(cfg["sched"]),
        cfg.get("since", ""),
        cfg.get("ends") or (),
        bool(cfg.get("final")),
    )


def _instant(text: str) -> datetime:
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def end_by_hand(board: BoardConfig, now: datetime, now_iso: str) -> BoardConfig:
    """The board with its current custom period ended at `now` (a season ended by an admin):
    Conflict when it keeps no custom periods, or the current one started this very second."""
    calendar = board.calendar()
    if board.tournament is not None:
        raise Conflict("a tournament ends at its ends_at, not by hand", field="tournament")
    if calendar is None:
        raise Conflict(
            "the board keeps no custom periods to end (periods without custom)", field="periods"
        )
    at = now.astimezone(UTC).replace(microsecond=0)
    if calendar.start_at(at) >= at:
        raise Conflict("the current period started less than a second ago; nothing to end")
    ends = (*board.ended_by_hand, at.strftime("%Y-%m-%dT%H:%M:%SZ"))[-KEPT_ENDS:]
    return replace(board, ended_by_hand=ends, updated_at=now_iso, version=board.version + 1)


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed or not isinstance(value, str):
        raise BadRequest(f"{name} must be one of {', '.join(allowed)}", field=name)
    return value


def _optional_bound(value: Any, name: str) -> int | float | None:
    return None if value is None else require_score(value, name)


def _parse_field(name: str, value: Any, hook_targets: Collection[str]) -> Any:
    if name == "title":
        if value is None:
            return None
        if not isinstance(value, str) or len(value) > 100:
            raise BadRequest("title must be a string of at most 100 characters", field=name)
        return value
    if name == "sort":
        return _choice(value, name, SORTS)
    if name == "mode":
        return _choice(value, name, MODES)
    if name == "ties":
        return _choice(value, name, TIES)
    if name == "periods":
        if not isinstance(value, list) or not value:
            raise BadRequest("periods must be a non-empty list", field=name)
        for item in value:
            _choice(item, name, BOARD_PERIOD_KINDS)
        if len(set(value)) != len(value):
            raise BadRequest("periods must not repeat", field=name)
        return tuple(k for k in BOARD_PERIOD_KINDS if k in value)
    if name == "max_entries":
        return (
            None
            if value is None
            else require_int(value, name, minimum=1, maximum=MAX_ENTRIES_LIMIT)
        )
    if name in ("min_score", "max_score"):
        return _optional_bound(value, name)
    if name == "max_increment":
        bound = _optional_bound(value, name)
        if bound is not None and bound <= 0:
            raise BadRequest("max_increment must be positive", field=name)
        return bound
    if name == "regions":
        if value is None:
            return None
        if not isinstance(value, list) or not 1 <= len(value) <= MAX_REGIONS:
            raise BadRequest(
                f"regions must be null or a list of 1 to {MAX_REGIONS} codes", field=name
            )
        for item in value:
            if not isinstance(item, str) or not REGION_RE.fullmatch(item):
                raise BadRequest("each region must match ^[A-Z]{2,8}$", field=name)
        if len(set(value)) != len(value):
            raise BadRequest("regions must not repeat", field=name)
        return tuple(value)
    if name == "rate_limit_per_minute":
        return (
            None
            if value is None
            else require_int(value, name, minimum=1, maximum=MAX_RATE_PER_MINUTE)
        )
    if name == "live_top":
        return require_int(value, name, minimum=1, maximum=MAX_LIVE_TOP)
    if name == "shards":
        return require_int(value, name, minimum=1, maximum=MAX_SHARDS)
    if name == "tiebreakers":
        return parse_columns(value)
    if name == "validation_hook":
        return parse_hook_field(value, hook_targets)
    if name == "teams":
        return None if value is None else _choice(value, name, TEAM_AGGREGATES)
    if name == "schedule":
        return None if value is None else Schedule.parse(value)
    if name == "rewards":
        return None if value is None else parse_rewards(value)
    if name == "tournament":
        return None if value is None else Tournament.parse(value)
    if name == "league":
        return None if value is None else League.parse(value)
    if name == "score_tiers":
        return None if value is None else ScoreTiers.parse(value)
    raise AssertionError(name)  # pragma: no cover


def parse_board_request(
    board_id: str,
    body: dict[str, Any],
    existing: BoardConfig | None,
    *,
    has_entries: bool,
    now_iso: str,
    hook_targets: Collection[str] = frozenset(),
) -> BoardConfig:
    """Validate a PUT body against the current board (if any).

    Fields left out keep their current value (defaults on create), so a client can change the
    title without restating every rule; an explicit null clears a nullable rule.
    `hook_targets`: the validation hooks this deployment allows a board to name.

    What the API document's schema refuses is BadRequest (400), and comes first: every field's
    shape is checked before any rule it cannot state (Unprocessable, 422): a field's own (an
    unknown zone, a hook the deployment does not list), then the rules between fields.
    """
    known_fields(body, {*_FIELDS, "board_id"})
    if "board_id" in body:
        require_board_id(body["board_id"])
    changes: dict[str, Any] = {}
    refused: Unprocessable | None = None
    for name in _FIELDS:
        if name in body:
            try:
                changes[name] = _parse_field(name, body[name], hook_targets)
            except Unprocessable as error:  # well-formed: a later field may still be malformed
                refused = refused or error
    if refused is not None:
        raise refused
    if "board_id" in body and body["board_id"] != board_id:
        raise Unprocessable("board_id in the body must match the path", field="board_id")

    if existing is None and changes.get("tournament") is not None and "periods" not in body:
        changes["periods"] = (CUSTOM,)  # a tournament's one period is its window
    base = existing or BoardConfig(board_id=board_id, created_at=now_iso)
    board = replace(
        base, **changes, updated_at=now_iso, version=(existing.version + 1) if existing else 1
    )

    if (
        board.min_score is not None
        and board.max_score is not None
        and board.min_score > board.max_score
    ):
        raise Unprocessable("min_score must not be greater than max_score", field="min_score")
    if board.mode != "increment" and board.max_increment is not None:
        raise Unprocessable("max_increment applies to increment boards only", field="max_increment")
    if board.shards > 1 and board.max_entries is not None:
        # Each shard could keep its own best N, but not the board's best N in one write.
        raise Unprocessable(
            "max_entries cannot be exact on a sharded board: use shards 1, or no max_entries",
            field="max_entries",
        )
    if board.shards > 1 and board.teams is not None:
        # A team's members are spread over every shard by a hash of their ids, and one
        # submission's script reaches one shard: a team total could not change with it.
        raise Unprocessable(
            "teams cannot be exact on a sharded board: use shards 1, or no teams", field="teams"
        )
    if board.tournament is not None:
        if board.periods != (CUSTOM,) or board.schedule is not None:
            raise Unprocessable(
                'a tournament keeps one period, its window: periods ["custom"] and no schedule',
                field="tournament",
            )
        if board.shards > 1:
            raise Unprocessable(
                "a tournament's caps cannot be exact on a sharded board: use shards 1",
                field="tournament",
            )
        windows = board.calendar()
        if isinstance(windows, Windows) and windows.first_start() is None:
            raise Unprocessable(
                "no window of the recurrence starts between the series' start (starts_at, or "
                "the board's creation) and its ends_at",
                field="tournament.ends_at",
            )
    elif (CUSTOM in board.periods) != (board.schedule is not None):
        raise Unprocessable(
            "a board keeps custom periods exactly when it has a schedule: add both `custom` to "
            "periods and a schedule, or neither",
            field="schedule",
        )
    if board.league is not None:
        board.league.check_board(
            seasons=board.schedule is not None and CUSTOM in board.periods,
            shards=board.shards,
            teams=board.teams,
            max_entries=board.max_entries,
        )
    if board.score_tiers is not None:  # a view: may change at any time, with entries too
        board.score_tiers.check_order(board.sort)
    if existing is not None and has_entries:
        changed = [f for f in IMMUTABLE_WITH_ENTRIES if getattr(existing, f) != getattr(board, f)]
        if changed:
            raise Conflict(
                f"{', '.join(changed)} cannot change once the board has entries",
                fields=changed,
            )
    return board
