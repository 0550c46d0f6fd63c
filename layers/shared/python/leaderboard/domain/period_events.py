"""The `period.ended` event: what a closed period's final standings and reward tiers are, its
stable identity, its JSON, and the HMAC signature a webhook receiver checks.

Pure domain code (no AWS, no I/O): the rollover builds the event from the archived entries in
rank order and hands it to a `PeriodEventSink` (leaderboard/stores/aws/event_bus.py); the webhook
delivery signs the same bytes. A re-run of a crashed rollover builds the same event, so every
receiver sees the same `id` and, byte for byte, the same body (docs/API.md, "Period-end events
and webhooks").
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

from leaderboard.domain.errors import BadRequest, Unprocessable
from leaderboard.domain.periods import Period
from leaderboard.domain.validation import known_fields

EVENT_TYPE = "period.ended"
T = TypeVar("T")
REASONS = ("schedule", "manual", "tournament")
DEFAULT_TOP = 10
MAX_TOP = 1000
MAX_TIERS = 10
MAX_RANK = 1_000_000
MAX_TIER_PLAYERS = 1000
# EventBridge takes entries of up to 256 KiB (Detail, Source and DetailType together): tiers
# are cut further, and say so, until the envelope fits with room to spare.
MAX_EVENT_BYTES = 240 * 1024
# A league season's moves per part of its period.ended event (about 150 bytes a move).
MOVES_PER_PART = 1000
TIER_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_-")
# Fixed, so that every deployment derives the same id for the same board and period.
EVENT_NAMESPACE = uuid.UUID("6f0e3a52-5d0b-4c1e-9a57-3f1d2c8b7e41")

HEADER_EVENT_ID = "Leaderboard-Event-Id"
HEADER_TIMESTAMP = "Leaderboard-Timestamp"
HEADER_SIGNATURE = "Leaderboard-Signature"
SIGNATURE_VERSION = "v1"
DEFAULT_TOLERANCE_S = 300


class RankedEntry(Protocol):
    """An archived entry as the archive reads it (domain.read_results.Entry fits)."""

    @property
    def rank(self) -> int: ...

    @property
    def player_id(self) -> str: ...

    @property
    def score(self) -> int | float: ...

    @property
    def tiebreakers(self) -> dict[str, int] | None: ...


# --- the board's reward declaration -------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RewardTier:
    """A named range of ranks, either fixed (`ranks`: [from, to]) or the top `top_percent`
    percent of the period's entries, resolved against the final total when the period ends."""

    name: str
    from_rank: int | None = None
    to_rank: int | None = None
    top_percent: float | None = None

    def ranks_for(self, total: int) -> tuple[int, int]:
        """[from, to] for a period of `total` entries: top_percent means ranks up to
        ceil(total * p / 100) (at least rank 1 when there is any entry)."""
        if self.top_percent is None:
            assert self.from_rank is not None and self.to_rank is not None
            return self.from_rank, self.to_rank
        return 1, math.ceil(total * self.top_percent / 100)

    def to_json(self) -> dict[str, Any]:
        if self.top_percent is not None:
            return {"name": self.name, "top_percent": self.top_percent}
        return {"name": self.name, "ranks": [self.from_rank, self.to_rank]}


@dataclass(frozen=True, slots=True)
class Rewards:
    """A board's `rewards` declaration: how many final entries an event lists (`top`) and
    its reward tiers."""

    top: int = DEFAULT_TOP
    tiers: tuple[RewardTier, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"top": self.top, "tiers": [t.to_json() for t in self.tiers]}


def _strict_int(value: Any, what: str, low: int, high: int) -> int:
    """An integer field of the declaration; 5.0 is 5, as JSON Schema counts integers."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BadRequest(f"{what} must be an integer from {low} to {high}")
    return value


def _tier(raw: Any, position: int) -> RewardTier:
    """One tier's shape (400); its ranks' order is checked with the other rules (422)."""
    where = f"rewards.tiers[{position}]"
    if not isinstance(raw, Mapping):
        raise BadRequest(f"{where} must be an object")
    known_fields(raw, {"name", "ranks", "top_percent"}, where)
    name = raw.get("name")
    if not isinstance(name, str) or not 1 <= len(name) <= 32 or not set(name) <= TIER_NAME_CHARS:
        raise BadRequest(f"{where}.name must be 1-32 lowercase letters, digits, - or _")
    if ("ranks" in raw) == ("top_percent" in raw):
        raise BadRequest(f"{where} needs exactly one of ranks or top_percent")
    if "ranks" in raw:
        ranks = raw["ranks"]
        if not isinstance(ranks, list) or len(ranks) != 2:
            raise BadRequest(f"{where}.ranks must be [from, to]")
        low = _strict_int(ranks[0], f"{where}.ranks[0]", 1, MAX_RANK)
        high = _strict_int(ranks[1], f"{where}.ranks[1]", 1, MAX_RANK)
        return RewardTier(name, from_rank=low, to_rank=high)
    percent = raw["top_percent"]
    if (
        isinstance(percent, bool)
        or not isinstance(percent, int | float)
        or not (0 < percent <= 100)
        or not math.isfinite(percent)
    ):
        raise BadRequest(f"{where}.top_percent must be a number above 0 and at most 100")
    return RewardTier(name, top_percent=percent)


def parse_rewards(raw: Any) -> Rewards:
    """A board's reward declaration from its JSON, checked as every board rule is: what the
    API document's schema refuses (a wrong type or shape, a value out of its range, more than
    10 tiers) is BadRequest (400); what it cannot state (a tier's `from` above its `to`, a
    name used twice) Unprocessable (422), once the whole declaration is well-formed."""
    if raw is None:
        return Rewards()
    if not isinstance(raw, Mapping):
        raise BadRequest("rewards must be an object")
    known_fields(raw, {"top", "tiers"}, "rewards")
    top = _strict_int(raw.get("top", DEFAULT_TOP), "rewards.top", 0, MAX_TOP)
    tiers_raw = raw.get("tiers", [])
    if not isinstance(tiers_raw, list) or len(tiers_raw) > MAX_TIERS:
        raise BadRequest(f"rewards.tiers must be a list of at most {MAX_TIERS} tiers")
    tiers = tuple(_tier(t, i) for i, t in enumerate(tiers_raw))
    backwards = [n for n, t in enumerate(tiers) if (t.from_rank or 0) > (t.to_rank or 0)]
    if backwards:
        where = f"rewards.tiers[{backwards[0]}]"
        raise Unprocessable(f"{where}.ranks must be [from, to] with from <= to")
    names = [t.name for t in tiers]
    if len(set(names)) != len(names):
        raise Unprocessable("rewards.tiers names must be unique")
    return Rewards(top=top, tiers=tiers)


# --- the event ------------------------------------------------------------------------------


def event_id(board_id: str, period_id: str) -> str:
    """The event's id: one per board and period, whoever builds it and however often."""
    return str(uuid.uuid5(EVENT_NAMESPACE, f"{board_id}\n{period_id}"))


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _placing(entry: RankedEntry) -> dict[str, Any]:
    body: dict[str, Any] = {
        "rank": entry.rank,
        "player_id": entry.player_id,
        "score": entry.score,
    }
    if entry.tiebreakers is not None:
        body["tiebreakers"] = dict(entry.tiebreakers)
    return body


@dataclass(frozen=True, slots=True)
class TierResult:
    name: str
    from_rank: int
    to_rank: int
    players: tuple[dict[str, Any], ...]
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "from_rank": self.from_rank,
            "to_rank": self.to_rank,
            "players": list(self.players),
            "truncated": self.truncated,
        }


@dataclass(frozen=True, slots=True)
class PeriodEnded:
    """One closed period of one board: its final top entries and reward tiers."""

    board_id: str
    period_id: str
    period_kind: str
    starts_at: str | None
    ends_at: str | None
    reason: str
    total_entries: int
    top: tuple[dict[str, Any], ...] = ()
    tiers: tuple[TierResult, ...] = ()
    # When the event says it happened: the period's end (deterministic), else `closed_at`.
    time: str = ""
    # League boards: this part's players' moves ({"part", "parts", "moves"}); the season's
    # event comes in parts of MOVES_PER_PART moves, part 1 also carrying top and tiers.
    league: dict[str, Any] | None = None

    @property
    def event_id(self) -> str:
        part = (self.league or {}).get("part", 1)
        if part > 1:
            return str(uuid.uuid5(EVENT_NAMESPACE, f"{self.board_id}\n{self.period_id}\n{part}"))
        return event_id(self.board_id, self.period_id)

    def in_parts(
        self, moves: Sequence[T], to_json: Callable[[T], dict[str, Any]]
    ) -> Iterator[PeriodEnded]:
        """A league season's event: this one with the first MOVES_PER_PART moves (ordered by
        the caller, by player id, so a re-run sends the same parts), then one part for each
        further chunk, without top and tiers; each part has its own id. A part's moves are
        made JSON only when it is made: a million moves held as dicts took 430 MB."""
        parts = max(1, -(-len(moves) // MOVES_PER_PART))
        for n in range(1, parts + 1):
            chunk = moves[(n - 1) * MOVES_PER_PART : n * MOVES_PER_PART]
            body = {"part": n, "parts": parts, "moves": [to_json(m) for m in chunk]}
            if n == 1:
                yield replace(self, league=body)
            else:
                yield replace(self, top=(), tiers=(), league=body)

    @classmethod
    def build(
        cls,
        board_id: str,
        period: Period,
        *,
        reason: str,
        total: int,
        entries: Iterable[RankedEntry],
        rewards: Rewards | None = None,
        closed_at: datetime | None = None,
    ) -> PeriodEnded:
        """The event from the archived entries in rank order (shared ranks allowed: a tier
        takes every entry whose rank falls in its range). `entries` is read once and only as
        far as the deepest rank the event needs, so a period of millions costs what it lists.
        `closed_at` gives the time of a period without an end (all-time: a tournament or a
        manual close); pass the same value on a re-run to get the same event."""
        if reason not in REASONS:
            raise ValueError(f"reason must be one of {', '.join(REASONS)}, not {reason!r}")
        if total < 0:
            raise ValueError("total must not be negative")
        if period.ends_at is None and closed_at is None:
            raise ValueError("a period without an end needs closed_at (the event's time)")
        rewards = rewards or Rewards()
        ranges = [(tier, *tier.ranks_for(total)) for tier in rewards.tiers]
        deepest = max([rewards.top, *(high for _, _, high in ranges)])
        top: list[dict[str, Any]] = []
        players: list[list[dict[str, Any]]] = [[] for _ in ranges]
        truncated = [False] * len(ranges)
        for entry in entries:
            if entry.rank > deepest:
                break
            placing = _placing(entry)
            if entry.rank <= rewards.top:
                top.append(placing)
            for i, (_, low, high) in enumerate(ranges):
                if low <= entry.rank <= high:
                    if len(players[i]) < MAX_TIER_PLAYERS:
                        players[i].append(placing)
                    else:
                        truncated[i] = True
        moment = period.ends_at if period.ends_at is not None else closed_at
        event = cls(
            board_id=board_id,
            period_id=period.id,
            period_kind=period.kind,
            starts_at=_iso(period.starts_at),
            ends_at=_iso(period.ends_at),
            reason=reason,
            total_entries=total,
            top=tuple(top),
            tiers=tuple(
                TierResult(tier.name, low, high, tuple(players[i]), truncated[i])
                for i, (tier, low, high) in enumerate(ranges)
            ),
            time=_iso(moment) or "",
        )
        return event.fitted(MAX_EVENT_BYTES)

    def fitted(self, max_bytes: int) -> PeriodEnded:
        """This event, its longest tier halved (and marked truncated) until its JSON takes at
        most `max_bytes`: deterministic, so a re-run cuts the same players."""
        event = self
        while len(event.to_json().encode()) > max_bytes:
            longest = max(
                range(len(event.tiers)),
                key=lambda i: len(event.tiers[i].players),
                default=None,
            )
            if longest is None or not event.tiers[longest].players:
                raise ValueError(f"the event does not fit in {max_bytes} bytes even without tiers")
            tier = event.tiers[longest]
            cut = TierResult(
                tier.name,
                tier.from_rank,
                tier.to_rank,
                tier.players[: len(tier.players) // 2],
                True,
            )
            event = replace(event, tiers=(*event.tiers[:longest], cut, *event.tiers[longest + 1 :]))
        return event

    def data(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "board_id": self.board_id,
            "period": {
                "id": self.period_id,
                "kind": self.period_kind,
                "starts_at": self.starts_at,
                "ends_at": self.ends_at,
            },
            "reason": self.reason,
            "total_entries": self.total_entries,
            "top": list(self.top),
            "tiers": [t.to_json() for t in self.tiers],
        }
        if self.league is not None:
            body["league"] = self.league
        return body

    def envelope(self) -> dict[str, Any]:
        return {"id": self.event_id, "type": EVENT_TYPE, "time": self.time, "data": self.data()}

    def to_json(self) -> str:
        """The envelope as canonical JSON: the same event gives the same text, always."""
        return canonical_json(self.envelope())


def canonical_json(value: Any) -> str:
    """Sorted keys, no spaces, UTF-8 as is: what the bus carries and the webhook signs."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


# --- signatures -----------------------------------------------------------------------------


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """`v1=` and the hex HMAC-SHA256 of "<timestamp>." followed by the body, with the shared
    secret: the timestamp is signed too, so an old delivery cannot be replayed as new."""
    mac = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_VERSION}={mac}"


def verify(
    secret: bytes,
    timestamp_header: str | None,
    signature_header: str | None,
    body: bytes,
    now: float,
    tolerance_s: int = DEFAULT_TOLERANCE_S,
) -> bool:
    """Whether a delivery is ours and fresh: the timestamp within `tolerance_s` of `now` and
    one of the signature header's `v1=` values equal (in constant time) to ours."""
    if not timestamp_header or not signature_header or not timestamp_header.isdigit():
        return False
    timestamp = int(timestamp_header)
    if abs(now - timestamp) > tolerance_s:
        return False
    expected = sign(secret, timestamp, body)
    return any(
        hmac.compare_digest(expected.encode(), candidate.strip().encode())
        for candidate in signature_header.split(",")
    )
