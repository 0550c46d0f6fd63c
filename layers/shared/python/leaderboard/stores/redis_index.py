"""The serving index: boards, scores and ranks in Redis/Valkey sorted sets.

Layout, every key of a board under the hash tag `{board}` so one script can touch them all:
  lb:{b}:cfg            compact board rules read by the scripts (JSON)
  lb:{b}:range          "lo hi": bounds of every score on the board (blind increments)
  lb:{b}:z:<period>[:R] sorted set of one period (and region R): member -> score
  lb:{b}:zh:<period>[:R] its shadow: the entries of hidden players (lua/hidden.lua)
  lb:{b}:m:<period>[:R] ties=first and tie-breaker boards: player -> member (member = a
                        prefix ending in '|' (score and tie keys, arrival), then the player)
  lb:{b}:hidden         hidden players: player -> when hidden (ms); while it has one, the cfg
                        text ends with a space (lua/hidden.lua)
  lb:{b}:meta           player -> metadata JSON
  lb:{b}:refs           player -> number of sorted sets holding the player (no orphan metadata)
  lb:{b}:keys           registry of the board's sorted-set suffixes
  lb:{b}:seq            per-board version counter (every event's version)
  lb:{b}:idem:<h>       idempotency record (fingerprint + result), expires
  lb:{b}:rl:<player>    rate-limit token bucket, expires
  lb:{b}:outbox         stream of events not yet confirmed in PostgreSQL (drained by the relay)
  lb:boards             catalog: board_id -> public board JSON (one key, for GET /boards)
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import wraps
from importlib import resources
from typing import Any, ParamSpec, TypeVar

from redis.exceptions import BusyLoadingError, ClusterDownError, NoScriptError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from leaderboard.domain.boards import BoardConfig, script_calendar
from leaderboard.domain.errors import (
    ArchivedPeriod,
    BoardMissing,
    Conflict,
    DomainError,
    HookUnavailable,
    NotFound,
    RateLimited,
    RejectedByHook,
    TournamentRefused,
    Unavailable,
    Unprocessable,
)
from leaderboard.domain.events import Eviction, Standing
from leaderboard.domain.hooks import (
    REJECTED,
    UNAVAILABLE,
    HookConfig,
    Screening,
    parse_record_field,
)
from leaderboard.domain.live import Channel
from leaderboard.domain.periods import CUSTOM, Calendar, Period
from leaderboard.domain.shards import (
    arrival_number,
    shard_board_id,
    shard_board_ids,
    shard_of,
    stamp_prefix,
)
from leaderboard.domain.submissions import Submission
from leaderboard.domain.tiebreakers import (
    COLUMN_DIGITS,
    TieBreaker,
    decode,
    decode_with_spec,
    parse_spec,
    score_key,
    score_of_key,
    tie_key,
)
from leaderboard.domain.tiebreakers import member as tiebreaker_member
from leaderboard.domain.validation import format_score
from leaderboard.stores.redis_client import (
    RedisLike,
    connected_replicas,
    queue_script,
    queue_wait,
)

CATALOG_KEY = "lb:boards"
# Boards with custom periods -> when the rollover next has work on them (ms): a period ends, or
# an archived one's retention runs out. A run every minute reads only the boards that are due.
ROLLOVER_DUE_KEY = "lb:rollover-due"
_UNREACHABLE = (
    RedisConnectionError,
    RedisTimeoutError,
    BusyLoadingError,
    ClusterDownError,
    TryAgainError,
)
P = ParamSpec("P")
R = TypeVar("R")
# The board's validation hook on the submissions at these positions of a request, one
# screening each (leaderboard.services.scores makes it; called only for boards with a hook).
Screen = Callable[[HookConfig, Sequence[int]], Sequence[Screening]]


def guarded(method: Callable[P, R]) -> Callable[P, R]:
    """An unreachable serving index is a 503 with Retry-After, never a 500."""

    @wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except _UNREACHABLE as exc:
            raise Unavailable(
                "the serving index (Redis) is unavailable", retry_after=1, store="redis"
            ) from exc

    return call


# Scripts that store or read tie-breaker boards get the shared functions of tiebreakers.lua;
# those that write or read sets that may hide players, those of hidden.lua.
_WITH_TIEBREAKERS = frozenset(
    {"submit", "read", "players", "live", "shard_read", "visibility", "watch", "delete_player"}
)
_WITH_STANDING = frozenset({"live", "watch", "delete_player"})
_WITH_HIDDEN = frozenset({"submit", "read", "players", "shard_read"})
_WITH_TEAMS = frozenset({"visibility", "delete_player"})


def _script(name: str) -> str:
    folder = resources.files("leaderboard.stores").joinpath("lua")
    text = folder.joinpath(f"{name}.lua").read_text()
    if name in _WITH_TEAMS:
        text = folder.joinpath("teams.lua").read_text() + text
    if name in _WITH_HIDDEN:
        text = folder.joinpath("hidden.lua").read_text() + text
    if name in _WITH_STANDING:  # after the tie-breakers' helpers, which it uses
        text = folder.joinpath("standing.lua").read_text() + text
    if name in _WITH_TIEBREAKERS:
        text = folder.joinpath("tiebreakers.lua").read_text() + text
    return text


# Outbox entries for the live publisher alone (visibility.lua, delete_player.lua): the admin
# routes record these in PostgreSQL themselves, so the relay trims them without sending them.
LIVE_ONLY_OPERATIONS = frozenset({"hide", "unhide", "remove"})


class BoardKeys:
    """Key names of one board; all share the board's hash tag."""

    __slots__ = ("board_id", "prefix")

    def __init__(self, board_id: str) -> None:
        self.board_id = board_id
        self.prefix = f"lb:{{{board_id}}}:"

    @staticmethod
    def suffix(period_id: str, region: str | None) -> str:
        return f"{period_id}:{region}" if region else period_id

    def zset(self, period_id: str, region: str | None = None) -> str:
        return f"{self.prefix}z:{self.suffix(period_id, region)}"

    def members(self, period_id: str, region: str | None = None) -> str:
        return f"{self.prefix}m:{self.suffix(period_id, region)}"

    def ranked(self, ranks: str, period_id: str, region: str | None = None) -> str:
        """The sorted set a read ranks: the players (ranks ""), a team board's teams
        ("teams"), or one team's members ("members:<team>")."""
        suffix = self.suffix(period_id, region)
        if ranks == "teams":
            return f"{self.prefix}zt:{suffix}"
        if ranks.startswith("members:"):
            return f"{self.prefix}tm:{suffix}:{ranks[8:]}"
        return f"{self.prefix}z:{suffix}"

    def shadow(self, period_id: str, region: str | None = None) -> str:
        """The set's shadow: the entries of hidden players."""
        return f"{self.prefix}zh:{self.suffix(period_id, region)}"

    def watches(self, period_kind: str, region: str | None = None) -> str:
        """player -> watch, for a channel's every period (lua/standing.lua: watch_decode)"""
        return f"{self.prefix}w:{period_kind}:{region or ''}"

    def watched_ranks(self, period_id: str, region: str | None = None) -> str:
        """player -> the rank the live publisher last knew, in one period"""
        return f"{self.prefix}wr:{self.suffix(period_id, region)}"

    def watches_due(self, period_id: str, region: str | None = None) -> str:
        """the watches to rank again on the publisher's next call (over its budget)"""
        return f"{self.prefix}wd:{self.suffix(period_id, region)}"

    @property
    def hidden(self) -> str:
        return self.prefix + "hidden"

    @property
    def player_teams(self) -> str:
        """player -> the teams the player contributed to ("a,b": lua/teams.lua)"""
        return self.prefix + "pt"

    @property
    def cfg(self) -> str:
        return self.prefix + "cfg"

    @property
    def range(self) -> str:
        return self.prefix + "range"

    @property
    def meta(self) -> str:
        return self.prefix + "meta"

    @property
    def refs(self) -> str:
        return self.prefix + "refs"

    @property
    def registry(self) -> str:
        return self.prefix + "keys"

    @property
    def seq(self) -> str:
        return self.prefix + "seq"

    @property
    def outbox(self) -> str:
        return self.prefix + "outbox"

    @property
    def archived(self) -> str:
        return self.prefix + "archived"

    def idempotency(self, subject: str, key: str) -> str:
        digest = hashlib.sha256(json.dumps([subject, key]).encode()).hexdigest()[:40]
        return f"{self.prefix}idem:{digest}"

    def rate(self, player_id: str) -> str:
        return f"{self.prefix}rl:{player_id}"


@dataclass(frozen=True, slots=True)
class BatchWrite:
    """One submission of a batch, with the event id and idempotency scope it is applied with."""

    submission: Submission
    event_id: str
    idempotency: tuple[str, str] | None


class CustomPeriodsKept(Exception):
    """A read of every current period reached a board of custom periods without its current
    one: here is the board's calendar, to place it and ask again (rare: callers cache it)."""

    def __init__(self, calendar: Calendar | None) -> None:
        super().__init__("the board keeps custom periods")
        self.calendar = calendar


@dataclass(frozen=True, slots=True)
class WatchStanding:
    """A watched player's standing when the watch started, and the watch's friends."""

    score: int | float | None
    rank: int | None
    friends: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SubmitResult:
    event_id: str
    applied: bool
    version: int
    occurred_at_ms: int
    operation: str
    standings: tuple[Standing, ...]
    evictions: tuple[Eviction, ...]
    replayed: bool
    arrival: int | None = None  # sharded ties=first boards: what orders the player's ties
    # False when replicas were asked to confirm the write (RedisIndex.replica_acks) and too few
    # did in time: a failover now could lose it, so it must not be acknowledged or queued.
    replicated: bool = True
    # The board's validation hook on it (accept, flag, failed_open); None: the board has none.
    hook_verdict: str | None = None
    hook_reason: str | None = None

    def screened(self, screening: Screening | None) -> SubmitResult:
        """With the verdict the record keeps (a replay carries this request's verdict)."""
        if screening is None or not screening.verdict:
            return self
        return replace(self, hook_verdict=screening.verdict, hook_reason=screening.reason)


@dataclass(frozen=True, slots=True)
class Entry:
    rank: int
    player_id: str
    score: int | float
    metadata: dict[str, Any] | None
    tiebreakers: dict[str, int] | None = None  # boards with tie-breakers only
    # The reader's own entry, shown to them although the board hides them (others never see it)
    hidden: bool = False

    def to_json(self) -> dict[str, Any]:
        body = {
            "rank": self.rank,
            "player_id": self.player_id,
            "score": self.score,
            "metadata": self.metadata,
        }
        if self.tiebreakers is not None:
            body["tiebreakers"] = self.tiebreakers
        return body


@dataclass(frozen=True, slots=True)
class Window:
    total: int
    start: int
    player_position: int | None
    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class Selection:
    """Chosen players of one board (period, region), in board order, ranked on the whole board."""

    total: int
    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class PeriodStanding:
    """A player's place on one period (and region) of a board."""

    kind: str
    period: str
    region: str | None
    rank: int
    score: int | float
    total: int
    tiebreakers: dict[str, int] | None = None
    hidden: bool = False  # the hidden reader's own standing (see Entry.hidden)


def _split_suffix(suffix: str) -> tuple[str, str | None]:
    period, _, region = suffix.partition(":")
    return period, region or None


def _record_score(text: str) -> float:
    """A score in a submission's record: a number, or on tie-breaker boards '#' and the score's
    key (the script then formats no number: docs/architecture.md, "The submit script")."""
    return score_of_key(text[1:]) if text[0] == "#" else float(text)


def _parse_record(record: str, replayed: bool, rules: WriteRules | None = None) -> SubmitResult:
    """A submission's record. Lines carry the set's suffix (period[:region]) and the entry
    before; records written before issue 22 (still in outboxes and idempotency records) carry
    period and region, and no entry before. `rules`: the board's, whose tie-breakers decode the
    tie keys kept (None or a board without: none decoded)."""
    decode = rules.decode if rules is not None and rules.tiebreakers else None
    head, *lines = record.split("\n")
    event_id, applied, version, now_ms, operation, *arrival = head.split("\t")
    standings: list[Standing] = []
    evictions: list[Eviction] = []
    for line in lines:
        fields = line.split("\t")
        at = 1 if fields[0] == "-" else 0
        if len(fields) == 5:  # a pre-issue-22 line: period and region in two fields
            fields[at : at + 2] = [
                f"{fields[at]}:{fields[at + 1]}" if fields[at + 1] else fields[at]
            ]
        period, region = _split_suffix(fields[at])
        if at:
            evictions.append(Eviction(period, region, fields[2], fields[3] == "1"))
            continue
        # changed: '1', or '2' for a hidden player's entry (the live publisher skips those)
        _, score, rank, changed, *previous = fields
        before, before_rank = previous[:2] if previous else ("", "")  # older records: unknown
        tie_key = previous[2] if len(previous) > 2 and previous[2] else None
        contribution = previous[3] if len(previous) > 3 and previous[3] else None
        standings.append(
            Standing(
                period=period,
                region=region,
                score=format_score(_record_score(score)),
                rank=int(rank) if rank and rank != "-" else None,
                changed=changed != "0",
                unranked=rank == "-",
                previous_score=format_score(_record_score(before)) if before else None,
                previous_rank=int(before_rank) if before_rank and before_rank != "-" else None,
                tie_key=tie_key,
                tiebreakers=decode(tie_key) if decode is not None else None,
                team_contribution=format_score(float(contribution)) if contribution else None,
            )
        )
    return SubmitResult(
        arrival=int(arrival[0]) if arrival else None,
        event_id=event_id,
        applied=applied == "1",
        version=int(version),
        occurred_at_ms=int(now_ms),
        operation=operation,
        standings=tuple(standings),
        evictions=tuple(evictions),
        replayed=replayed,
    )


@dataclass(frozen=True, slots=True)
class WriteRules:
    """The board rules the submit script needs, as cached by the caller with the cfg text they
    were read from (the script proves them current with one GET)."""

    text: str
    periods: frozenset[str]
    regions: frozenset[str]
    args: tuple[str, ...]  # ARGV 11-17 of submit.lua
    mode: str
    first: bool
    min: float | None
    max: float | None
    max_increment: float | None
    shards: int = 1
    desc: bool = True
    region_order: tuple[str, ...] = ()
    tiebreakers: tuple[TieBreaker, ...] = ()
    hook: HookConfig | None = None  # the board's validation hook (not the script's concern)
    teams: str | None = None  # the board's team aggregate ("sum", "best"), or no teams
    calendar: Calendar | None = None  # where the board's custom periods fall; None: none kept
    tournament: str = ""  # a tournament's rules for the submit script (ARGV 27); '' = none

    @property
    def keyed(self) -> bool:
        """Entries stored under a member other than the player id (a member map per set)."""
        return self.first or bool(self.tiebreakers)

    @property
    def group(self) -> int:
        """How many leading characters of a member equal tuples share (score key and tie key)
        on tie-breaker boards; 0 elsewhere, where equal scores are equal tuples."""
        return COLUMN_DIGITS * (1 + len(self.tiebreakers)) if self.tiebreakers else 0

    def member_tiebreakers(self, member: str) -> dict[str, int] | None:
        """The tie-breakers a tie-breaker board's member carries (None on other boards)."""
        if not self.tiebreakers:
            return None
        return self.decode(member[COLUMN_DIGITS : self.group])

    @classmethod
    def parse(cls, text: str) -> WriteRules:
        text = text.rstrip(" ")  # the space that says the board hides players (lua/hidden.lua)
        cfg = json.loads(text)

        def opt(name: str) -> str:
            value = cfg.get(name)
            return "" if value is None else str(value)

        return cls(
            text=text,
            periods=frozenset(cfg["periods"]),
            regions=frozenset(cfg.get("regions") or ()),
            args=(
                cfg["mode"],
                "1" if cfg["sort"] == "desc" else "",
                "1" if cfg["ties"] == "first" else "",
                opt("min"),
                opt("max"),
                opt("rate"),
                opt("max_entries"),
            ),
            mode=cfg["mode"],
            first=cfg["ties"] == "first",
            min=cfg.get("min"),
            max=cfg.get("max"),
            max_increment=cfg.get("max_inc"),
            shards=int(cfg.get("shards", 1)),
            desc=cfg["sort"] == "desc",
            region_order=tuple(cfg.get("regions") or ()),
            tiebreakers=tuple(
                TieBreaker(name, cfg["sort"] if not flipped else _OTHER_SORT[cfg["sort"]])
                for name, flipped in (parse_spec(cfg["tb"]) if cfg.get("tb") else ())
            ),
            hook=HookConfig.from_json(cfg.get("hook")),
            teams=cfg.get("teams"),
            calendar=script_calendar(cfg),
            tournament=cfg.get("tour", ""),
        )

    def periods_at(self, periods: dict[str, Period], now_ms: int) -> dict[str, Period]:
        """The current periods a submission goes to: the fixed kinds' as given, and the
        board's custom period as these rules place it (so a STALE answer places it again)."""
        if self.calendar is None:
            return periods
        now = datetime.fromtimestamp(now_ms / 1000, UTC)
        return {**periods, CUSTOM: self.calendar.period_at(now)}

    def tie_key(self, submission: Submission) -> str:
        """ARGV 22 of submit.lua: the submitted tie-breakers' key ('' when the board has none,
        or they do not fit it: `precheck` says so)."""
        if not self.tiebreakers:
            return ""
        try:
            return tie_key(submission.tiebreakers, self.tiebreakers, "desc" if self.desc else "asc")
        except Unprocessable:
            return ""

    def decode(self, key: str | None) -> dict[str, int] | None:
        """The tie-breakers of a stored tie key (None on boards without)."""
        if key is None or not self.tiebreakers:
            return None
        return decode(key, self.tiebreakers, "desc" if self.desc else "asc")

    def precheck(self, submission: Submission) -> str:
        """What the script would refuse, found without Redis (answered after idempotency)."""
        if submission.region and submission.region not in self.regions:
            return "unknown_region"
        if (self.tiebreakers or submission.tiebreakers) and not self.tie_key(submission):
            return "tiebreakers"
        if submission.team_id is not None and self.teams is None:
            return "teams"
        score = submission.score
        if self.mode == "increment":
            if self.max_increment is not None and abs(score) > self.max_increment:
                return "max_increment"
        elif (self.min is not None and score < self.min) or (
            self.max is not None and score > self.max
        ):
            return "bounds"
        return ""


_OTHER_SORT = {"desc": "asc", "asc": "desc"}
_NO_BOARD = "board not found"
_RULES_CACHE_SIZE = 4096


class RedisIndex:
    """All Redis access of the service; each public call is one round trip once warm."""

    def __init__(
        self,
        client: RedisLike,
        *,
        idempotency_ttl_seconds: int = 90_000,
        replica_acks: int = 0,
        replica_ack_timeout_ms: int = 100,
    ) -> None:
        """`replica_acks` > 0: every submission waits (WAIT, in the same round trip) until that
        many replicas have it, at most `replica_ack_timeout_ms`; one they did not confirm comes
        back `replicated=False`. Replication is asynchronous: without this, a master that
        acknowledged a write and died before its replica had it loses the write on failover."""
        self.client = client
        self.idempotency_ttl = idempotency_ttl_seconds
        self.replica_acks = replica_acks
        self.replica_ack_timeout_ms = replica_ack_timeout_ms
        self._submit = client.register_script(_script("submit"))
        self._read = client.register_script(_script("read"))
        self._put_config = client.register_script(_script("put_config"))
        self._delete_player = client.register_script(_script("delete_player"))
        self._board_entries = client.register_script(_script("board_entries"))
        self._hide_board = client.register_script(_script("hide_board"))
        self._periods = client.register_script(_script("periods"))
        self._purge_set = client.register_script(_script("purge_set"))
        self._players = client.register_script(_script("players"))
        self._visibility = client.register_script(_script("visibility"))
        self._join = client.register_script(_script("join"))
        self._watch = client.register_script(_script("watch"))
        self._purge_teams = client.register_script(_script("purge_teams"))
        # Per execution environment: the submit script's rules by board (checked on every call).
        self._rules: dict[str, WriteRules] = {}
        self._last_arrival = 0
        self._sharded: Any = None  # the reads of sharded boards, made on first need

    # --- writes -------------------------------------------------------------------------
    @guarded
    def submit(
        self,
        board_id: str,
        submission: Submission,
        *,
        event_id: str,
        now_ms: int,
        periods: dict[str, Period],
        idempotency: tuple[str, str] | None,
        screen: Screen | None = None,
    ) -> SubmitResult:
        """Apply a submission to every period (and region) the board keeps, in one script call
        once this process has the board's rules (a new or changed board costs one more).
        A board with a validation hook: `screen` judges it first, with the rules the script
        then proves current (changed rules with another hook: judged again)."""
        arrival = self._arrival()
        screening: Screening | None = None
        judged_by: HookConfig | None = None
        for _ in range(3):
            rules = self._rules.get(board_id)
            hook = rules.hook if rules is not None else None
            if hook is None or screen is None or rules is None or rules.precheck(submission):
                screening, judged_by = None, None  # no hook, or refused whatever it says
            elif hook != judged_by:
                screening, judged_by = screen(hook, [0])[0], hook
            keys, args = self.submit_call(
                board_id,
                submission,
                self._rules.get(board_id),
                event_id=event_id,
                now_ms=now_ms,
                periods=periods,
                idempotency=idempotency,
                arrival=(arrival, 0),
                screening=screening,
            )
            replicated = True
            if self.replica_acks:
                reply, replicated = self._submit_and_wait(keys, args)
            else:
                reply = self._submit(keys=keys, args=args)
            status = reply[0]
            if status in ("OK", "REPLAY"):
                result = _parse_record(
                    reply[1], status == "REPLAY", self._rules_of(board_id)
                ).screened(screening)
                return result if replicated else replace(result, replicated=False)
            if status != "STALE":
                raise _submit_error(board_id, submission, reply[1:], screening)
            self._remember_rules(board_id, WriteRules.parse(reply[1]))
        raise Unavailable("the board's rules kept changing; retry", retry_after=1, store="redis")

    def _submit_and_wait(self, keys: list[str], args: list[Any]) -> tuple[Any, bool]:
        """The submit script and a WAIT on its node, in one round trip: (reply, replicated)."""
        for _ in range(2):
            pipe = self.client.pipeline(transaction=False)
            queue_script(pipe, self.client, self._submit.sha, keys, args)
            queue_wait(pipe, self.client, keys[0], self.replica_acks, self.replica_ack_timeout_ms)
            reply, acked = pipe.execute(raise_on_error=False)
            if isinstance(reply, NoScriptError):  # a restarted Redis: nothing was applied
                self.client.script_load(self._submit.script)
                continue
            for answer in (reply, acked):
                if isinstance(answer, Exception):
                    raise answer
            return reply, self._confirmed(keys[0], int(acked))
        raise Unavailable("the submit script could not be loaded; retry", retry_after=1)

    def _confirmed(self, key: str, acked: int) -> bool:
        """Whether enough replicas of the node holding `key` have the writes: `replica_acks`,
        or every replica it has if it has fewer. A node left with no replica (its replica took
        over from it, or died) has none that a failover could promote without the write, so
        it keeps taking writes; losing it loses the whole shard, which the rebuild from
        PostgreSQL restores. A replica cut off by a partition still counts until the
        replication link times out (60 s), and by then the cluster has stopped the node's
        writes (after its node timeout, 15 s), so no write slips through that way. Costs a
        round trip (ROLE) only when the replicas fell short."""
        if acked >= self.replica_acks:
            return True
        return acked >= min(self.replica_acks, connected_replicas(self.client, key))

    @guarded
    def submit_many(
        self,
        board_id: str,
        writes: Sequence[BatchWrite],
        *,
        now_ms: int,
        periods: dict[str, Period],
        screen: Screen | None = None,
    ) -> list[SubmitResult | DomainError]:
        """Apply many submissions to one board in one pipelined round trip (one more when this
        process does not have the board's current rules). They apply in order, each in its own
        script call: one refused submission does not stop the others. A board with a
        validation hook: `screen` judges every submission it may apply in one call first."""
        results: list[SubmitResult | DomainError | None] = [None] * len(writes)
        pending = list(range(len(writes)))
        arrival = self._arrival()
        screened: dict[int, tuple[HookConfig, Screening]] = {}
        for _ in range(3):
            rules = self._rules.get(board_id)
            hook = rules.hook if rules is not None else None
            if hook is not None and screen is not None and rules is not None:
                todo = [
                    i
                    for i in pending
                    if (i not in screened or screened[i][0] != hook)
                    and not rules.precheck(writes[i].submission)
                ]
                if todo:
                    judged = screen(hook, todo)
                    if len(judged) != len(todo):
                        raise RuntimeError("a screening per submission was expected")
                    screened.update(zip(todo, ((hook, s) for s in judged), strict=True))

            def screening_of(i: int, hook: HookConfig | None = hook) -> Screening | None:
                got = screened.get(i)
                return got[1] if got is not None and got[0] == hook else None

            pipe = self.client.pipeline(transaction=False)
            nodes: dict[int, str] = {}  # item -> the node its script ran on
            waits: dict[str, str] = {}  # node -> a key of it, for its WAIT
            for i in pending:
                write = writes[i]
                keys, args = self.submit_call(
                    board_id,
                    write.submission,
                    rules,
                    event_id=write.event_id,
                    now_ms=now_ms,
                    periods=periods,
                    idempotency=write.idempotency,
                    arrival=(arrival, i),
                    screening=screening_of(i),
                )
                # EVALSHA itself: a pipeline given the Script would first ask SCRIPT EXISTS,
                # one more round trip on every batch.
                nodes[i] = queue_script(pipe, self.client, self._submit.sha, keys, args)
                if self.replica_acks:
                    waits.setdefault(nodes[i], keys[0])
            for key in waits.values():  # one WAIT per node, after all of its scripts
                queue_wait(pipe, self.client, key, self.replica_acks, self.replica_ack_timeout_ms)
            everything = pipe.execute(raise_on_error=False)
            replies = everything[: len(pending)]
            confirmed: dict[str, bool] = {}
            for node, acked in zip(waits, everything[len(pending) :], strict=True):
                if isinstance(acked, Exception):
                    raise acked
                confirmed[node] = self._confirmed(waits[node], int(acked))
            stale: list[int] = []
            if any(isinstance(reply, NoScriptError) for reply in replies):
                self.client.script_load(self._submit.script)  # a restarted Redis
            for i, reply in zip(pending, replies, strict=True):
                if isinstance(reply, NoScriptError):  # nothing applied: send it again
                    stale.append(i)
                    continue
                if isinstance(reply, Exception):
                    raise reply
                status = reply[0]
                if status in ("OK", "REPLAY"):
                    result = _parse_record(
                        reply[1], status == "REPLAY", self._rules_of(board_id)
                    ).screened(screening_of(i))
                    if self.replica_acks and not confirmed[nodes[i]]:
                        result = replace(result, replicated=False)
                    results[i] = result
                elif status == "STALE":
                    self._remember_rules(board_id, WriteRules.parse(reply[1]))
                    stale.append(i)
                else:
                    error = _submit_error(
                        board_id, writes[i].submission, reply[1:], screening_of(i)
                    )
                    if not isinstance(error, DomainError) or isinstance(error, BoardMissing):
                        raise error
                    results[i] = error
            if not stale:
                done = [r for r in results if r is not None]
                if len(done) != len(writes):
                    raise RuntimeError("a batch submission got no reply")
                return done
            pending = stale
        raise Unavailable("the board's rules kept changing; retry", retry_after=1, store="redis")

    def submit_call(
        self,
        board_id: str,
        submission: Submission,
        rules: WriteRules | None,
        *,
        event_id: str,
        now_ms: int,
        periods: dict[str, Period],
        idempotency: tuple[str, str] | None,
        arrival: tuple[int, int] = (0, 0),
        screening: Screening | None = None,
    ) -> tuple[list[str], list[Any]]:
        """The submit script's keys and arguments (rules None: unknown yet, answered STALE).
        On a sharded board they name the player's shard; `arrival` (microseconds, place in
        its batch) orders equal scores there on ties=first boards. `screening`: what the
        board's validation hook said (a refusal is answered as the caller's error code, after
        the idempotency check; a verdict goes to the outbox with the event)."""
        sharded = rules is not None and rules.shards > 1
        if sharded:
            assert rules is not None
            board_id = shard_board_id(
                board_id, shard_of(submission.player_id, rules.shards), rules.shards
            )
        keys = BoardKeys(board_id)
        script_keys = [
            keys.cfg,
            keys.range,
            keys.idempotency(*idempotency) if idempotency else keys.prefix + "idem:-",
            keys.seq,
            keys.meta,
            keys.refs,
            keys.registry,
            keys.rate(submission.player_id),
            keys.outbox,
        ]
        if rules is not None:
            regions: list[str | None] = [None]
            if submission.region and submission.region in rules.regions:
                regions.append(submission.region)
            periods = rules.periods_at(periods, now_ms)
            for region in regions:
                for kind, period in periods.items():
                    if kind in rules.periods:
                        script_keys.append(keys.zset(period.id, region))
                        if rules.keyed:
                            script_keys.append(keys.members(period.id, region))
        score = submission.score
        refused = rules.precheck(submission) if rules is not None else ""
        if not refused and screening is not None:
            refused = screening.error
        args: list[Any] = [
            rules.text if rules is not None else "",
            submission.player_id,
            repr(score) if isinstance(score, float) else str(score),
            now_ms,
            event_id,
            submission.region or "",
            json.dumps(submission.metadata, separators=(",", ":"))
            if submission.metadata is not None
            else "",
            submission.fingerprint() if idempotency else "",
            self.idempotency_ttl,
            refused,
            *(rules.args if rules is not None else ("set", "", "", "", "", "", "")),
            len(keys.prefix) + 3,  # where a set key's suffix starts (after "z:"), 1-based
        ]
        if sharded and rules is not None:
            args.append("1")
            if rules.first:
                number = arrival_number(*arrival)
                args += [stamp_prefix(number, rules.desc), number]
        if rules is not None and rules.tiebreakers:
            args += [""] * (21 - len(args))  # ARGV 19-21 are optional
            args.append(rules.tie_key(submission))
        if screening is not None and screening.verdict:
            # ARGV 23, the verdict for the outbox: 19-22 are '' when they do not apply.
            args += [""] * (22 - len(args)) + [screening.record_field()]
        if rules is not None and rules.teams is not None:
            # ARGV 24-25: the team the contribution goes to, and how the board adds them up
            args += [""] * (23 - len(args)) + [submission.team_id or "", rules.teams]
        if rules is not None and rules.tiebreakers:
            # ARGV 26: the submitted score's key, so the script need not build it
            args += [""] * (25 - len(args)) + [score_key(float(score))]
        if rules is not None and rules.tournament:
            # ARGV 27: the tournament's window, sign-up and caps, checked with the write
            args += [""] * (26 - len(args)) + [rules.tournament]
        return script_keys, args

    def _rules_of(self, board_id: str) -> WriteRules | None:
        """The board's rules, to decode the tie keys a record keeps (cached; read if unknown)."""
        return self._rules.get(board_id) or self.write_rules(board_id)

    def _arrival(self) -> int:
        """Microseconds on this host's clock, never going back within the process."""
        self._last_arrival = max(self._last_arrival + 1, time.time_ns() // 1000)
        return self._last_arrival

    @guarded
    def write_rules(self, board_id: str) -> WriteRules | None:
        """The board's rules as the submit script checks them (cached; read if unknown)."""
        if board_id not in self._rules:
            text = self.client.get(BoardKeys(board_id).cfg)
            if text is None:
                return None
            self._remember_rules(board_id, WriteRules.parse(text))
        return self._rules[board_id]

    def _remember_rules(self, board_id: str, rules: WriteRules) -> None:
        if len(self._rules) >= _RULES_CACHE_SIZE and board_id not in self._rules:
            self._rules.pop(next(iter(self._rules)))
        self._rules[board_id] = rules

    @guarded
    def shards_of(self, board_id: str) -> int:
        """How many shards the board has (1: unsharded), from the rules this process has or
        the board's own cfg key."""
        rules = self._rules.get(board_id)
        if rules is not None:
            return rules.shards
        raw = self.client.get(BoardKeys(board_id).cfg)
        return int(json.loads(raw).get("shards", 1)) if raw else 1

    @guarded
    def key_spaces(self, board_id: str) -> list[str]:
        """The names whose keys hold the board's entries: the board's own, or its shards'."""
        shards = self.shards_of(board_id)
        if shards <= 1:
            return [board_id]
        return shard_board_ids(board_id, shards)

    @guarded
    def delete_player(self, board_id: str, player_id: str) -> tuple[int, int]:
        """Remove a player everywhere on the board; returns (entries removed, version)."""
        shards = self.shards_of(board_id)
        if shards > 1:
            board_id = shard_board_id(board_id, shard_of(player_id, shards), shards)
        keys = BoardKeys(board_id)
        removed, version = self._delete_player(
            keys=[keys.registry, keys.meta, keys.refs, keys.seq, keys.outbox],
            # the removal's outbox entry, for the live publisher (lua/delete_player.lua)
            args=[player_id, keys.prefix, int(time.time() * 1000), str(uuid.uuid4())],
        )
        return int(removed), int(version)

    @guarded
    def publish_board(self, board: BoardConfig) -> bool:
        """Make a board's rules visible to the scripts and the catalog (newest version wins)."""
        keys = BoardKeys(board.board_id)
        text = json.dumps(board.to_script_config(), separators=(",", ":"))
        before = self.client.get(keys.cfg)
        written = self._put_config(keys=[keys.cfg, keys.hidden], args=[text, board.version])
        if written:
            # A sharded board's rules are on every shard too (its writes and reads prove them
            # there); a board that had other shards (only while it had no entries) loses them.
            old = int(json.loads(before).get("shards", 1)) if before else 1
            for shard in range(board.shards if board.shards > 1 else 0):
                shard_keys = BoardKeys(shard_board_id(board.board_id, shard, board.shards))
                self._put_config(
                    keys=[shard_keys.cfg, shard_keys.hidden], args=[text, board.version]
                )
            gone = range(board.shards if board.shards > 1 else 0, old if old > 1 else 0)
            for shard in gone:
                self.client.delete(BoardKeys(shard_board_id(board.board_id, shard, old)).cfg)
            self._rules.pop(board.board_id, None)
            public = board.to_public() | {"version": board.version}
            self.client.hset(CATALOG_KEY, board.board_id, json.dumps(public))
        return bool(written)

    @guarded
    def join(self, board_id: str, player_id: str, now_ms: int) -> tuple[bool, int]:
        """Sign a player up for a tournament: (newly joined, participants now). Refused
        (TournamentRefused) when it ended or is full; NotFound for an unknown board, Conflict
        for a board that is no tournament."""
        keys = BoardKeys(board_id)
        reply = self._join(keys=[keys.cfg, keys.prefix + "joined"], args=[player_id, now_ms])
        if reply[0] == "OK":
            return reply[1] == 1, int(reply[2])
        if reply[1] == "no_board":
            raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
        if reply[1] == "not_tournament":
            raise Conflict(f"board {board_id!r} is not a tournament", board_id=board_id)
        raise TournamentRefused(reply[2])

    @guarded
    def watch(
        self,
        board_id: str,
        player_id: str,
        channel: Channel,
        *,
        until_ms: int,
        top_n: int,
        friends: tuple[str, ...] | None,
        keep_seconds: int,
        now_ms: int | None = None,
    ) -> WatchStanding:
        """Start or renew a player's watch of one channel (friends None: keep the watch's);
        the player's standing now. A new watch starts its chain of messages there; a renewal
        (the watch had not expired at `now_ms`) keeps its chain (lua/watch.lua)."""
        keys = BoardKeys(board_id)
        reply = self._watch(
            keys=self._watch_keys(keys, channel),
            args=[
                player_id,
                "put",
                until_ms,
                top_n,
                "-" if friends is None else ",".join(friends),
                keep_seconds,
                int(time.time() * 1000) if now_ms is None else now_ms,
            ],
        )
        if reply[0] == "GONE":
            raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
        _, score, rank, kept = reply
        return WatchStanding(
            score=format_score(float(score)) if score != "" else None,
            rank=int(rank) if rank != "" else None,
            friends=tuple(kept.split(",")) if kept else (),
        )

    @guarded
    def unwatch(self, board_id: str, player_id: str, channel: Channel) -> None:
        keys = BoardKeys(board_id)
        reply = self._watch(
            keys=self._watch_keys(keys, channel), args=[player_id, "end", 0, 0, "", 0]
        )
        if reply[0] == "GONE":
            raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)

    @staticmethod
    def _watch_keys(keys: BoardKeys, channel: Channel) -> list[str]:
        period, region = channel.period_id, channel.region
        return [
            keys.cfg,
            keys.zset(period, region),
            keys.members(period, region),
            keys.watches(channel.period_kind, region),
            keys.watched_ranks(period, region),
            keys.seq,
        ]

    @guarded
    def rollover_due_at(self, board_id: str, at: datetime | None) -> None:
        """When the rollover next has work on this board (None: never, until told again)."""
        if at is None:
            self.client.zrem(ROLLOVER_DUE_KEY, board_id)
        else:
            self.client.zadd(ROLLOVER_DUE_KEY, {board_id: int(at.timestamp() * 1000)})

    @guarded
    def rollover_due(self, now: datetime, limit: int = 1000) -> list[str]:
        """The boards the rollover has work on at `now`, the longest waiting first."""
        due = self.client.zrangebyscore(
            ROLLOVER_DUE_KEY, "-inf", int(now.timestamp() * 1000), start=0, num=limit
        )
        return [b.decode() if isinstance(b, bytes) else b for b in due]

    @guarded
    def board_loaded(self, board_id: str, shards: int = 1) -> bool:
        """Whether the index serves this board (false: unknown, or its data was lost: on a
        sharded board, any shard's). One round trip to each node holding a part of it."""
        if shards <= 1:
            return bool(self.client.exists(BoardKeys(board_id).cfg))
        pipe = self.client.pipeline(transaction=False)
        for name in (board_id, *shard_board_ids(board_id, shards)):
            pipe.exists(BoardKeys(name).cfg)
        return all(pipe.execute())

    @guarded
    def lost_since_ms(self, board_id: str, now_ms: int) -> int:
        """When this board was first seen lost (recorded on the first call)."""
        key = BoardKeys(board_id).prefix + "lost"
        previous = self.client.set(key, now_ms, nx=True, get=True, ex=86_400)
        return int(previous) if previous is not None else now_ms

    @guarded
    def lock_rebuild(self, board_id: str, seconds: int = 900) -> bool:
        """Take the board's rebuild lock (one rebuild at a time); False if someone has it."""
        return bool(
            self.client.set(BoardKeys(board_id).prefix + "rebuilding", 1, nx=True, ex=seconds)
        )

    @guarded
    def rebuild_in_progress(self, board_id: str) -> bool:
        return bool(self.client.exists(BoardKeys(board_id).prefix + "rebuilding"))

    @guarded
    def unlock_rebuild(self, board_id: str) -> None:
        self.client.delete(BoardKeys(board_id).prefix + "rebuilding")

    @guarded
    def stop_writes(self, board_id: str, shards: int = 1) -> None:
        """Refuse the board's writes, clearing nothing else: its rules (and its shards') go,
        so a submission answers 503 "being restored" as for a lost board, and reads come from
        the record. The first step of a rebuild; publish_board ends it."""
        names = [board_id, *(shard_board_ids(board_id, shards) if shards > 1 else [])]
        for name in names:  # one key a call: on a cluster the shards' rules are on other slots
            self.client.delete(BoardKeys(name).cfg)
        self._rules.pop(board_id, None)

    @guarded
    def outbox_event_ids(self, board_id: str, shards: int = 1, *, chunk: int = 1000) -> list[str]:
        """The score events still in the board's outboxes: each stays until the relay finds
        it in PostgreSQL, so these are the ones the record may lack (live-only entries, a
        hiding or a removal, are no score events)."""
        found: list[str] = []
        for name in [board_id, *(shard_board_ids(board_id, shards) if shards > 1 else [])]:
            key, start = BoardKeys(name).outbox, "-"
            while True:
                rows = self.client.xrange(key, start, "+", count=chunk)
                for _, fields in rows:
                    head = fields.get("r", "").split("\n", 1)[0].split("\t")
                    if len(head) >= 5 and head[4] not in LIVE_ONLY_OPERATIONS:
                        found.append(head[0])
                if len(rows) < chunk:
                    break
                start = "(" + rows[-1][0]
        return found

    @guarded
    def hide_board(self, board_id: str, shards: int = 1) -> int:
        """Take a board out of service and clear its serving data (the start of a rebuild);
        a sharded board's own keys first (its rules: writes are refused from then on), then
        every shard's."""
        names = [board_id]
        if shards > 1:
            names += shard_board_ids(board_id, shards)
        cleared = 0
        for name in names:
            keys = BoardKeys(name)
            cleared += int(
                self._hide_board(
                    keys=[
                        keys.cfg,
                        keys.registry,
                        keys.meta,
                        keys.refs,
                        keys.seq,
                        keys.range,
                        keys.hidden,
                    ],
                    args=[keys.prefix],
                )
            )
        self._rules.pop(board_id, None)
        return cleared

    @guarded
    def load_entries(
        self,
        board: BoardConfig,
        period_id: str,
        region: str | None,
        rows: Sequence[tuple[str, float, int, str | None]],
        *,
        hidden: bool = False,
    ) -> None:
        """Add (player, score, reached version, tie key) rows to one sorted set, in one round
        trip (to each shard's set of a sharded board, one pipeline); `hidden`: rows of hidden
        players, to the set's shadow."""
        zset = BoardKeys.shadow if hidden else BoardKeys.zset
        if board.shards > 1:
            # ties=first: the record's reached value is the arrival that ordered the ties
            desc, first = board.sort == "desc", board.ties == "first"
            by_shard: dict[int, list[tuple[str, float, int, str | None]]] = {}
            for row in rows:
                by_shard.setdefault(shard_of(row[0], board.shards), []).append(row)
            pipe = self.client.pipeline(transaction=False)
            for shard, part in by_shard.items():
                keys = BoardKeys(shard_board_id(board.board_id, shard, board.shards))
                if board.tiebreakers:  # the member the submit script would have written
                    members = {
                        p: tiebreaker_member(
                            score,
                            key or "",
                            stamp_prefix(reached, desc)[:-1] if first else "",
                            p,
                        )
                        for p, score, reached, key in part
                    }
                    pipe.zadd(
                        zset(keys, period_id, region), {members[p]: sc for p, sc, _, _ in part}
                    )
                    pipe.hset(keys.members(period_id, region), mapping=members)
                elif first:
                    members = {p: stamp_prefix(reached, desc) + p for p, _, reached, _ in part}
                    pipe.zadd(
                        zset(keys, period_id, region), {members[p]: sc for p, sc, _, _ in part}
                    )
                    pipe.hset(keys.members(period_id, region), mapping=members)
                else:
                    pipe.zadd(zset(keys, period_id, region), {p: sc for p, sc, _, _ in part})
                pipe.sadd(keys.registry, keys.suffix(period_id, region))
                pipe.delete(keys.range)
            pipe.execute()
            return
        keys = BoardKeys(board.board_id)
        zkey, mkey = zset(keys, period_id, region), keys.members(period_id, region)
        pipe = self.client.pipeline(transaction=False)
        desc = board.sort == "desc"
        if board.tiebreakers:  # the member the submit script would have written
            members = {
                player: tiebreaker_member(
                    score,
                    tie_key or "",
                    f"{(999_999_999_999_999 - reached) if desc else reached:015d}"
                    if board.ties == "first"
                    else "",
                    player,
                )
                for player, score, reached, tie_key in rows
            }
            pipe.zadd(zkey, {members[p]: score for p, score, _, _ in rows})
            pipe.hset(mkey, mapping=members)
        elif board.ties == "first":
            members = {
                player: f"{(999_999_999_999_999 - reached) if desc else reached:015d}|{player}"
                for player, _, reached, _ in rows
            }
            pipe.zadd(zkey, {members[p]: score for p, score, _, _ in rows})
            pipe.hset(mkey, mapping=members)
        else:
            pipe.zadd(zkey, {player: score for player, score, _, _ in rows})
        pipe.sadd(keys.registry, keys.suffix(period_id, region))
        pipe.delete(keys.range)  # recomputed from the sets by the next increment
        pipe.execute()

    @guarded
    def load_players(
        self, board_id: str, refs: dict[str, int], metadata: dict[str, str], shards: int = 1
    ) -> None:
        pipe = self.client.pipeline(transaction=False)
        for player, count in refs.items():
            name = (
                board_id
                if shards <= 1
                else shard_board_id(board_id, shard_of(player, shards), shards)
            )
            keys = BoardKeys(name)
            pipe.hset(keys.refs, player, count)
            if player in metadata:
                pipe.hset(keys.meta, player, metadata[player])
        pipe.execute()

    @guarded
    def load_hidden(self, board_id: str, hidden: dict[str, int], shards: int = 1) -> None:
        """The board's hidden players (player -> when hidden, ms), each on its own shard; their
        entries were loaded to the sets' shadows (load_entries(hidden=True))."""
        by_name: dict[str, dict[str, int]] = {}
        for player, at in hidden.items():
            name = (
                board_id
                if shards <= 1
                else shard_board_id(board_id, shard_of(player, shards), shards)
            )
            by_name.setdefault(name, {})[player] = at
        pipe = self.client.pipeline(transaction=False)
        for name, players in by_name.items():
            keys = BoardKeys(name)
            pipe.hset(keys.hidden, mapping=players)
        pipe.execute()

    @guarded
    def hidden_players(self, board_id: str) -> list[str]:
        """The players the board hides (on every shard of a sharded board)."""
        found: list[str] = []
        for name in self.key_spaces(board_id):
            found += self.client.hkeys(BoardKeys(name).hidden)
        return sorted(found)

    @guarded
    def set_hidden(
        self, board_id: str, player_id: str, hidden: bool, *, event_id: str, now_ms: int
    ) -> tuple[bool, int]:
        """Hide a player on a board, or show them again (on their shard of a sharded board):
        (whether it changed anything, entries moved). BoardMissing if the board has no rules
        here (unknown, or its serving data was lost)."""
        shards = self.shards_of(board_id)
        name = (
            board_id
            if shards <= 1
            else shard_board_id(board_id, shard_of(player_id, shards), shards)
        )
        keys = BoardKeys(name)
        reply = self._visibility(
            keys=[keys.cfg, keys.registry, keys.hidden, keys.seq, keys.outbox],
            args=[
                "hide" if hidden else "unhide",
                player_id,
                keys.prefix,
                now_ms,
                event_id,
                now_ms,
            ],
        )
        if reply[0] == "ERR":
            raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
        return bool(int(reply[1])), int(reply[3])

    @guarded
    def period_sets(
        self, board_id: str
    ) -> tuple[dict[str, Any] | None, dict[str, int], dict[str, int]]:
        """(rules, {sorted-set suffix: entries}, {archived period: entries}), one round trip
        (one per shard of a sharded board: its sets summed, a period archived once every
        shard says so)."""
        rules: dict[str, Any] | None = None
        sets: dict[str, int] = {}
        archived: dict[str, int] | None = None
        names = [board_id]  # its own keys answer for an unsharded board: one round trip
        for name in names:
            keys = BoardKeys(name)
            reply = self._periods(keys=[keys.registry, keys.archived, keys.cfg], args=[keys.prefix])
            if name == board_id:
                rules = json.loads(reply[0]) if reply[0] else None
                shards = int((rules or {}).get("shards", 1))
                if shards > 1:  # its rules here, its entries in its shards
                    names += shard_board_ids(board_id, shards)
                    continue
            count = int(reply[1])
            for i in range(count):
                suffix = reply[2 + 2 * i]
                sets[suffix] = sets.get(suffix, 0) + int(reply[3 + 2 * i])
            rest = reply[2 + 2 * count :]
            marked = {rest[i]: int(rest[i + 1]) for i in range(0, len(rest), 2)}
            archived = (
                marked if archived is None else {p: n for p, n in archived.items() if p in marked}
            )
        return rules, sets, archived or {}

    @guarded
    def mark_archived(self, board_id: str, period_id: str, entries: int) -> None:
        for name in self.key_spaces(board_id):
            self.client.hset(BoardKeys(name).archived, period_id, entries)

    @guarded
    def purge_chunk(self, board: BoardConfig, suffix: str, count: int) -> int:
        """Remove up to `count` entries of an archived sorted set (on each shard of a sharded
        board); returns how many are left."""
        left = 0
        for name in self.key_spaces(board.board_id):
            keys = BoardKeys(name)
            left += int(
                self._purge_set(
                    keys=[
                        f"{keys.prefix}z:{suffix}",
                        f"{keys.prefix}m:{suffix}",
                        keys.refs,
                        keys.meta,
                        keys.registry,
                        f"{keys.prefix}zh:{suffix}",
                    ],
                    args=[
                        suffix,
                        count,
                        "1" if board.ties == "first" or board.tiebreakers else "0",
                    ],
                )
            )
        return left

    @guarded
    def purge_teams(self, board: BoardConfig, suffix: str, count: int) -> int:
        """Remove up to `count` teams of an archived period's team ranking (with their members
        sets); returns how many are left."""
        keys = BoardKeys(board.board_id)
        return int(
            self._purge_teams(
                keys=[f"{keys.prefix}zt:{suffix}", keys.hidden, keys.player_teams],
                args=[keys.prefix, suffix, count],
            )
        )

    @guarded
    def load_teams(
        self,
        board_id: str,
        period_id: str,
        region: str | None,
        members: dict[str, list[tuple[str, float, bool]]],
        scores: dict[str, float],
    ) -> None:
        """One set's teams, from the record: each team's members (player, contribution,
        hidden: to the shadow) and the teams' scores; one round trip."""
        keys = BoardKeys(board_id)
        suffix = keys.suffix(period_id, region)
        pipe = self.client.pipeline(transaction=False)
        for team, rows in members.items():
            for shadow in (False, True):
                part = {player: value for player, value, hidden in rows if hidden == shadow}
                if part:
                    kind = "tmh" if shadow else "tm"
                    pipe.zadd(f"{keys.prefix}{kind}:{suffix}:{team}", part)
        if scores:
            pipe.zadd(f"{keys.prefix}zt:{suffix}", scores)
        pipe.execute()

    @guarded
    def load_player_teams(self, board_id: str, named: dict[str, list[str]]) -> None:
        """Which teams each player contributed to (for deletes and hiding)."""
        if named:
            mapping = {player: ",".join(teams) for player, teams in named.items()}
            self.client.hset(BoardKeys(board_id).player_teams, mapping=mapping)

    @guarded
    def set_sequence(self, board_id: str, value: int, shards: int = 1) -> None:
        """Restart the version counter (every shard's, of a sharded board) at `value`."""
        names = [board_id] if shards <= 1 else shard_board_ids(board_id, shards)
        for name in names:
            self.client.set(BoardKeys(name).seq, value)

    @guarded
    def board_entry_count(self, board_id: str) -> int:
        """Entries on every sorted set of the board (of every shard of a sharded board)."""
        total = 0
        for name in self.key_spaces(board_id):
            keys = BoardKeys(name)
            total += int(self._board_entries(keys=[keys.registry], args=[keys.prefix]))
        return total

    # --- reads --------------------------------------------------------------------------
    @guarded
    def get_board(self, board_id: str) -> dict[str, Any] | None:
        raw = self.client.hget(CATALOG_KEY, board_id)
        return None if raw is None else _public_board(raw)

    @guarded
    def list_boards(self) -> list[dict[str, Any]]:
        boards = [_public_board(raw) for raw in self.client.hvals(CATALOG_KEY)]
        return sorted(boards, key=lambda b: b["board_id"])

    @guarded
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
    ) -> Window:
        """One read: a page, a window around a rank, one player, or a window around a player.
        `viewer`: the player who reads, if known; a hidden one reads the board with their own
        entry in it (marked `hidden`). `ranks`: what is read ("" players, "teams", or
        "members:<team>": BoardKeys.ranked; `player_id` is then a team or a member)."""

        def sharded(shards: Any, rules: WriteRules) -> Window:
            return shards.window(
                board_id,
                rules,
                period,
                region,
                op=op,
                size=size,
                offset_or_rank=offset_or_rank,
                player_id=player_id,
                viewer=viewer,
            )

        if ranks and self._is_sharded(board_id):  # a sharded board keeps no teams
            raise _read_error(board_id, period, region, player_id, "no_teams")
        if self._is_sharded(board_id):
            return self._on_shards(board_id, sharded)
        keys = BoardKeys(board_id)
        reply = self._read(
            keys=[
                keys.cfg,
                keys.ranked(ranks, period.id, region),
                keys.members(period.id, region),
                keys.meta,
                keys.archived,
            ],
            # ARGV 8-9, who reads and what is read, only when there is something to say
            args=[op, period.kind, region or "", player_id, offset_or_rank, size, period.id]
            + ([viewer, ranks.split(":", 1)[0]] if viewer or ranks else []),
        )
        if reply[0] == "SHARDED":
            if ranks:
                raise _read_error(board_id, period, region, player_id, "no_teams")
            return self._on_shards(board_id, sharded, reply[1])
        if reply[0] == "ERR":
            raise _read_error(board_id, period, region, player_id, reply[1])
        total, start, position, count = (int(x) for x in reply[1:5])
        shown = reply[5]  # the hidden reader whose own entry the window holds ('' = none)
        rows = reply[6 : 6 + 3 * count]
        metas = reply[6 + 3 * count : 6 + 4 * count]
        tbs = _tiebreakers(reply[6 + 4 * count :], count)
        entries = tuple(
            Entry(
                rank=int(rows[i * 3 + 2]),
                player_id=rows[i * 3],
                score=format_score(float(rows[i * 3 + 1])),
                metadata=json.loads(metas[i]) if metas[i] else None,
                tiebreakers=tbs[i],
                hidden=bool(shown) and rows[i * 3] == shown,
            )
            for i in range(count)
        )
        return Window(
            total=total,
            start=start,
            player_position=None if position < 0 else position,
            entries=entries,
        )

    @guarded
    def players(
        self,
        board_id: str,
        period: Period,
        region: str | None,
        player_ids: list[str],
        viewer: str = "",
        ranks: str = "",
    ) -> Selection:
        """Many players of one board in one read: the ones with an entry, in board order
        (`viewer` and `ranks`: as in `window`)."""

        def sharded(shards: Any, rules: WriteRules) -> Selection:
            return shards.players(board_id, rules, period, region, player_ids, viewer=viewer)

        if ranks and self._is_sharded(board_id):  # a sharded board keeps no teams
            raise _read_error(board_id, period, region, "", "no_teams")
        if self._is_sharded(board_id):
            return self._on_shards(board_id, sharded)
        keys = BoardKeys(board_id)
        reply = self._players(
            keys=[keys.cfg, keys.meta, keys.archived],
            args=[
                "many",
                keys.prefix,
                viewer,
                period.kind,
                period.id,
                region or "",
                ranks,
                *player_ids,
            ],
        )
        if reply[0] == "SHARDED":
            if ranks:
                raise _read_error(board_id, period, region, "", "no_teams")
            return self._on_shards(board_id, sharded, reply[1])
        if reply[0] == "ERR":
            raise _read_error(board_id, period, region, "", reply[1])
        total, count, shown = int(reply[1]), int(reply[2]), reply[3]
        rows = reply[4 : 4 + 4 * count]
        metas = reply[4 + 4 * count : 4 + 5 * count]
        tbs = _tiebreakers(reply[4 + 5 * count :], count)
        found = sorted(
            (
                int(rows[i * 4 + 3]),
                Entry(
                    rank=int(rows[i * 4 + 2]),
                    player_id=rows[i * 4],
                    score=format_score(float(rows[i * 4 + 1])),
                    metadata=json.loads(metas[i]) if metas[i] else None,
                    tiebreakers=tbs[i],
                    hidden=bool(shown) and rows[i * 4] == shown,
                ),
            )
            for i in range(count)
        )
        return Selection(total=total, entries=tuple(entry for _, entry in found))

    @guarded
    def standings(
        self,
        board_id: str,
        player_id: str,
        periods: list[Period],
        region: str | None,
        viewer: str = "",
    ) -> list[PeriodStanding]:
        """A player on every given period the board keeps, globally and on its regional boards
        (only `region`'s when given), in one read (`viewer`: as in `window`)."""

        def sharded(shards: Any, rules: WriteRules) -> list[PeriodStanding]:
            if rules.calendar is not None and all(p.kind != CUSTOM for p in periods):
                raise CustomPeriodsKept(rules.calendar)
            return shards.standings(board_id, rules, player_id, periods, region, viewer=viewer)

        if self._is_sharded(board_id):
            return self._on_shards(board_id, sharded)
        keys = BoardKeys(board_id)
        args: list[str] = ["standings", keys.prefix, viewer, player_id, region or ""]
        for period in periods:
            args += [period.kind, period.id]
        reply = self._players(keys=[keys.cfg, keys.meta, keys.archived], args=args)
        if reply[0] == "CUSTOM":
            raise CustomPeriodsKept(WriteRules.parse(reply[1]).calendar)
        if reply[0] == "SHARDED":
            return self._on_shards(board_id, sharded, reply[1])
        if reply[0] == "ERR":
            raise _read_error(board_id, periods[0], region, player_id, reply[1])
        count, shown = int(reply[1]), reply[2]
        rows = reply[3 : 3 + 6 * count]
        tbs = _tiebreakers(reply[3 + 6 * count :], count)
        return [
            PeriodStanding(
                kind=rows[i * 6],
                period=rows[i * 6 + 1],
                region=rows[i * 6 + 2] or None,
                score=format_score(float(rows[i * 6 + 3])),
                rank=int(rows[i * 6 + 4]),
                total=int(rows[i * 6 + 5]),
                tiebreakers=tbs[i],
                hidden=shown == player_id,
            )
            for i in range(count)
        ]

    def _is_sharded(self, board_id: str) -> bool:
        rules = self._rules.get(board_id)
        return rules is not None and rules.shards > 1

    def _on_shards(self, board_id: str, read: Callable[[Any, WriteRules], R], text: str = "") -> R:
        """A read of a sharded board with the rules this process has (or `text`'s); when a
        shard holds newer rules, they are learnt and the read is made again."""
        from leaderboard.stores.sharded_index import ShardedIndex, StaleRules

        if self._sharded is None:
            self._sharded = ShardedIndex(self.client)
        if text:
            self._remember_rules(board_id, WriteRules.parse(text))
        for _ in range(3):
            rules = self._rules[board_id]
            if rules.shards <= 1:
                break  # no longer sharded (it had no entries): read it as any board
            try:
                return read(self._sharded, rules)
            except StaleRules as stale:
                self._remember_rules(board_id, WriteRules.parse(stale.text))
            except BoardMissing:
                break  # its shards were dropped: the board's own rules decide
        self._rules.pop(board_id, None)
        raise Unavailable("the board's layout changed; retry", retry_after=1, store="redis")

    @guarded
    def outbox_entries(
        self, board_id: str, *, older_than_ms: int, count: int
    ) -> list[tuple[str, SubmitResult, dict[str, str]]]:
        """Outbox entries written before `older_than_ms` (Redis clock): (id, result, request)."""
        key = BoardKeys(board_id).outbox
        rows = self.client.xrange(key, "-", str(older_than_ms), count=count)
        return [
            (
                entry_id,
                _with_verdict(_parse_record(fields["r"], False, self._rules_of(board_id)), fields),
                fields,
            )
            for entry_id, fields in rows
        ]

    @guarded
    def outbox_ack(self, board_id: str, entry_ids: list[str]) -> None:
        if entry_ids:
            self.client.xdel(BoardKeys(board_id).outbox, *entry_ids)

    @guarded
    def server_time_ms(self) -> int:
        seconds, micros = self.client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    def ping(self) -> bool:
        return bool(self.client.ping())


def _with_verdict(result: SubmitResult, fields: dict[str, str]) -> SubmitResult:
    """An outbox entry's result, with the hook's verdict the entry keeps beside the record."""
    verdict, reason = parse_record_field(fields.get("h"))
    if verdict is None:
        return result
    return replace(result, hook_verdict=verdict, hook_reason=reason)


def _tiebreakers(tail: list[str], count: int) -> list[dict[str, int] | None]:
    """What a read script returns after its entries on a tie-breaker board: a tie key per
    entry ('' = none), then the board's columns; nothing on other boards."""
    if not tail:
        return [None] * count
    spec = parse_spec(tail[-1])
    return [decode_with_spec(key, spec) if key else None for key in tail[:-1]]


def _public_board(raw: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(raw)
    data.pop("version", None)
    data.setdefault("shards", 1)  # boards published before shards existed
    data.setdefault("validation_hook", None)  # and before validation hooks
    return data


def _submit_error(
    board_id: str, submission: Submission, detail: list[str], screening: Screening | None = None
) -> Exception:
    code = detail[0]
    if code == REJECTED:
        reason = screening.reason if screening is not None else None
        return RejectedByHook(reason or "the board's validation hook rejected this submission")
    if code == UNAVAILABLE:
        return HookUnavailable(
            "the board's validation hook did not answer in time or failed, and the board "
            "fails closed: nothing was written; retry later",
            retry_after=1,
        )
    if code == "no_board":
        return BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
    if code == "idempotency_conflict":
        return Conflict("this Idempotency-Key was already used with a different request body")
    if code == "unknown_region":
        return Unprocessable(
            f"region {submission.region!r} is not one of the board's regions", field="region"
        )
    if code == "tiebreakers":
        return Unprocessable(
            "tiebreakers must give exactly the board's tie-breaker columns (a board without "
            "tie-breakers takes none)",
            field="tiebreakers",
        )
    if code == "teams":
        return Unprocessable(
            "team_id names a team, but this board keeps no team rankings (its `teams` is null)",
            field="team_id",
        )
    if code == "max_increment":
        return Unprocessable("score exceeds the board's max_increment", field="score")
    if code == "bounds":
        where = f" for period {detail[1]}" if len(detail) > 1 and detail[1] else ""
        return Unprocessable(
            f"the resulting score{where} would fall outside the board's bounds "
            "(min_score/max_score, or 2^53-1)",
            field="score",
        )
    if code == "tournament":
        reason = detail[1] if len(detail) > 1 else ""
        return TournamentRefused(reason)
    if code == "rate_limited":
        retry_ms = int(detail[1])
        return RateLimited(
            "too many submissions for this player; retry later", retry_after=-(-retry_ms // 1000)
        )
    return RuntimeError(f"unexpected reply from the submit script: {detail!r}")


def _read_error(
    board_id: str, period: Period, region: str | None, player_id: str, code: str
) -> Exception:
    if code == "no_board":
        return BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
    if code == "no_period":
        return NotFound(f"board {board_id!r} does not keep {period.kind} periods", period=period.id)
    if code == "unknown_region":
        return NotFound(f"region {region!r} is not one of the board's regions", region=region)
    if code == "archived":
        return ArchivedPeriod(f"period {period.id} is archived", period=period.id)
    if code == "no_player":
        return NotFound(
            f"player {player_id!r} has no entry in {period.id}"
            + (f" ({region})" if region else ""),
            player_id=player_id,
        )
    if code == "no_teams":
        return NotFound(f"board {board_id!r} keeps no team rankings", board_id=board_id)
    return RuntimeError(f"unexpected reply from the read script: {code!r}")
