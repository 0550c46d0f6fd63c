"""Live updates: which channel carries a board's changes, and what a message on it says.

A channel is one board, one period kind and optionally one region. Channel names follow the
AWS AppSync Events rules (segments of at most 50 characters of `[A-Za-z0-9-]`), which board ids
(`[a-z0-9_-]`, up to 64 characters) do not always meet; `board_segment` maps every board id to a
valid segment, one-to-one, and the board object carries the result so clients need not.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from leaderboard.domain.leagues import League
from leaderboard.domain.score_tiers import Tiering, tier_field

NAMESPACE = "leaderboards"
MAX_SEGMENT = 50
DEFAULT_LIVE_TOP = 10
MAX_LIVE_TOP = 100
# Enough to show who moved since the last message, and small enough that a message with the
# default top stays within one 5 KB metering unit of the event API (docs/cost.md).
DEFAULT_MAX_CHANGED = 25
# AppSync Events refuses an event over 240 KiB; a message is cut to this to leave room for the
# publish envelope (fit_message).
MAX_MESSAGE_BYTES = 230 * 1024
MESSAGE_TYPE = "leaderboard.changed"


def board_segment(board_id: str) -> str:
    """The channel segment of a board.

    Board ids are lower case, so writing `_` as `U` cannot collide with another id. An id that
    is still too long keeps a readable prefix and gets `-H` plus a hash; no plain id holds an
    `H`, so that form cannot collide with one either.
    """
    segment = board_id.replace("_", "U")
    if len(segment) <= MAX_SEGMENT:
        return segment
    digest = hashlib.sha256(board_id.encode()).hexdigest()[:12].upper()
    return f"{segment[:36]}-H{digest}"


def board_channel(board_id: str, namespace: str = NAMESPACE) -> str:
    """The prefix of all of a board's channels (subscribe to `<prefix>/*` for every one)."""
    return f"/{namespace}/{board_segment(board_id)}"


def channel_name(
    board_id: str, period_kind: str, region: str | None, namespace: str = NAMESPACE
) -> str:
    """The channel of one board, period kind and region (None: the global board)."""
    name = f"{board_channel(board_id, namespace)}/{period_kind}"
    return f"{name}/{region}" if region else name


PLAYER_NAMESPACE = "players"


def player_segment(player_id: str) -> str:
    """The channel segment of a player: `P` and 40 hex digits of the SHA-256 of the id.

    Player ids may hold `_ . : @` and upper case, which channel segments may not; a digest maps
    every id into `[A-Za-z0-9-]`, and 160 bits make a collision no practical concern.
    """
    return "P" + hashlib.sha256(player_id.encode()).hexdigest()[:40]


def player_channel(player_id: str, namespace: str = PLAYER_NAMESPACE) -> str:
    """The channel that carries one player's standing changes on every board they watch."""
    return f"/{namespace}/{player_segment(player_id)}"


@dataclass(frozen=True, slots=True)
class Channel:
    """One channel of a board, with the period id that is current when it is read."""

    period_kind: str
    period_id: str
    region: str | None


@dataclass(frozen=True, slots=True)
class LiveEntry:
    player_id: str
    rank: int | None
    score: int | float | None
    metadata: dict[str, Any] | None
    # A `changed` entry: it says where the player stood before (previous_rank None: it had no
    # entry, or on a sharded board, where ranks are counted at read time).
    moved: bool = False
    previous_rank: int | None = None
    tiebreakers: dict[str, int] | None = None  # boards with tie-breakers only

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "rank": self.rank,
            "player_id": self.player_id,
            "score": self.score,
            "metadata": self.metadata,
        }
        if self.tiebreakers is not None:
            body["tiebreakers"] = self.tiebreakers
        if self.moved:
            body["previous_rank"] = self.previous_rank
        if self.rank is None:
            body["removed"] = True  # trimmed out by max_entries, or no longer on the board
        return body


@dataclass(frozen=True, slots=True)
class ChannelUpdate:
    """What changed on one channel since the previous message on it."""

    board_id: str
    channel: Channel
    version: int
    previous_version: int | None
    total: int
    top: tuple[LiveEntry, ...]
    changed: tuple[LiveEntry, ...]
    changed_truncated: bool = False
    extra: dict[str, Any] = field(default_factory=dict, compare=False)
    # the board's score tiers: each top and changed entry names its tier among `total`
    tiering: Tiering | None = None

    def name(self, namespace: str = NAMESPACE) -> str:
        return channel_name(self.board_id, self.channel.period_kind, self.channel.region, namespace)

    def to_message(self, published_at: str) -> dict[str, Any]:
        """The event published on the channel (docs/API.md, "Live updates")."""
        return {
            "type": MESSAGE_TYPE,
            "board_id": self.board_id,
            "period_kind": self.channel.period_kind,
            "period": self.channel.period_id,
            "region": self.channel.region,
            "version": self.version,
            "previous_version": self.previous_version,
            "total": self.total,
            "top": [self._entry(e) for e in self.top],
            "changed": [self._entry(e) for e in self.changed],
            "changed_truncated": self.changed_truncated,
            "truncated": False,
            "published_at": published_at,
        }

    def _entry(self, entry: LiveEntry) -> dict[str, Any]:
        return entry.to_json() | tier_field(self.tiering, entry.rank, entry.score, self.total)


def fit_message(
    message: dict[str, Any], encode: Callable[[dict[str, Any]], str], limit: int = MAX_MESSAGE_BYTES
) -> tuple[str, bool]:
    """The message as text within `limit` bytes, and whether anything was left out.

    A live board must never go quiet, so a message too big for the event API is cut, never
    dropped. The rule (docs/API.md, "Message size"): leave out the changed entries' metadata,
    then the top entries' metadata, then the changed entries, then top entries from the last
    up, until it fits. A cut message says `"truncated": true`; the client reads what it lacks.
    """
    text = encode(message)
    if _fits(text, limit):
        return text, False
    cut = dict(message, truncated=True)
    cut["changed"] = [dict(e, metadata=None) for e in message["changed"]]
    for step in ("top metadata", "changed", "top"):
        text = encode(cut)
        if _fits(text, limit):
            return text, True
        if step == "top metadata":
            cut["top"] = [dict(e, metadata=None) for e in message["top"]]
        elif step == "changed":
            cut["changed"], cut["changed_truncated"] = [], True
    top = cut["top"]
    low, high = 0, len(top)  # the most top entries that fit: `low` always does
    while low < high:
        middle = (low + high + 1) // 2
        if _fits(encode(dict(cut, top=top[:middle])), limit):
            low = middle
        else:
            high = middle - 1
    return encode(dict(cut, top=top[:low])), True


def _fits(text: str, limit: int) -> bool:
    return len(text.encode()) <= limit


PLAYER_MESSAGE_TYPE = "player.standing_changed"


@dataclass(frozen=True, slots=True)
class Passer:
    """A player who passed a watching player: their entry now, and whether a friend."""

    entry: LiveEntry
    friend: bool

    def to_json(self) -> dict[str, Any]:
        return {**self.entry.to_json(), "friend": self.friend}


@dataclass(frozen=True, slots=True)
class PlayerUpdate:
    """One watch's standing change, for the watching player's channel."""

    player_id: str
    board_id: str
    channel: Channel
    version: int
    rank: int | None
    previous_rank: int | None
    score: int | float | None
    top_n: int
    events: tuple[str, ...]
    passed_by: tuple[Passer, ...] = ()
    passed_by_truncated: bool = False
    total: int = 0  # entries of the channel's board, for percentile tiers
    tiering: Tiering | None = None  # the board's score tiers: the player and passers name theirs
    # A league board's season channel: the player's group as the scripts name it, their rank
    # in it ('' hidden) and its visible players; `league` formats it (domain/leagues.py).
    league_place: tuple[str, ...] | None = None
    league: League | None = None

    def name(self, namespace: str = PLAYER_NAMESPACE) -> str:
        return player_channel(self.player_id, namespace)

    def to_message(self, published_at: str) -> dict[str, Any]:
        """The event published on the player's channel (docs/API.md, "Player channels")."""
        return {
            "type": PLAYER_MESSAGE_TYPE,
            "player_id": self.player_id,
            "board_id": self.board_id,
            "period_kind": self.channel.period_kind,
            "period": self.channel.period_id,
            "region": self.channel.region,
            "version": self.version,
            "rank": self.rank,
            "previous_rank": self.previous_rank,
            "score": self.score,
            **tier_field(self.tiering, self.rank, self.score, self.total),
            "top_n": self.top_n,
            "events": list(self.events),
            "passed_by": [
                p.to_json() | tier_field(self.tiering, p.entry.rank, p.entry.score, self.total)
                for p in self.passed_by
            ],
            "passed_by_truncated": self.passed_by_truncated,
            **self._league_field(),
            "published_at": published_at,
        }

    def _league_field(self) -> dict[str, Any]:
        if self.league is None or self.league_place is None:
            return {}
        group, rank, members = self.league_place
        place = self.league.standing(
            self.channel.period_id, group, int(rank) if rank else None, int(members)
        )
        place.pop("season")
        return {"league": place}
