"""Watches: a player asks to be told when their standing on one board channel changes in the
ways a game shows (docs/API.md, "Player channels"). The publisher finds the watches a read's
changes concern and publishes on the player's channel; this module says what a watch is and
what a request for one may hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.errors import BadRequest, Unprocessable
from leaderboard.domain.periods import ALL_TIME, BOARD_PERIOD_KINDS
from leaderboard.domain.validation import (
    known_fields,
    require_int,
    require_player_id,
    require_region,
)

DEFAULT_TOP_N = 10
MAX_TOP_N = 1000
MAX_FRIENDS = 100
DEFAULT_TTL_SECONDS = 3600
MIN_TTL_SECONDS = 60
MAX_TTL_SECONDS = 86_400
# A message lists this many passers at most (nearest first, friends first).
MAX_PASSED_BY = 10
EVENTS = ("passed", "friend_passed", "entered_top", "left_top")
_FIELDS = frozenset({"period", "region", "top_n", "friends", "ttl_seconds"})


@dataclass(frozen=True, slots=True)
class WatchRequest:
    period_kind: str
    region: str | None
    top_n: int
    friends: tuple[str, ...] | None  # None: keep the watch's friends
    ttl_seconds: int


def parse_period_kind(value: Any) -> str:
    if value is None:
        return ALL_TIME
    if not isinstance(value, str) or value not in BOARD_PERIOD_KINDS:
        raise BadRequest(f"period must be one of {', '.join(BOARD_PERIOD_KINDS)}", field="period")
    return value


def parse_optional_region(value: Any) -> str | None:
    """A query's region: empty or left out is the global board, as on the reads."""
    return None if value is None or value == "" else require_region(value)


def parse_watch(body: Any, player_id: str) -> WatchRequest:
    """A watch request's body ({} takes every default); BadRequest (400) names the first
    malformed field; a well-formed body whose friends list the player itself is 422."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    known_fields(body, _FIELDS)
    for name in ("period", "friends"):  # `null` is no way to ask for the default: leave it out
        if name in body and body[name] is None:
            raise BadRequest(f"{name} may be left out, not null", field=name)
    friends = body.get("friends")
    if friends is not None:
        if not isinstance(friends, list) or len(friends) > MAX_FRIENDS:
            raise BadRequest(
                f"friends is a list of at most {MAX_FRIENDS} player ids", field="friends"
            )
        friends = tuple(require_player_id(f, "friends") for f in friends)
        if len(set(friends)) != len(friends):
            raise BadRequest("friends lists a player twice", field="friends")
    top_n = body.get("top_n", DEFAULT_TOP_N)
    ttl = body.get("ttl_seconds", DEFAULT_TTL_SECONDS)
    request = WatchRequest(
        period_kind=parse_period_kind(body.get("period")),
        region=None if body.get("region") is None else require_region(body["region"]),
        top_n=require_int(top_n, "top_n", minimum=1, maximum=MAX_TOP_N),
        friends=friends,
        ttl_seconds=require_int(
            ttl, "ttl_seconds", minimum=MIN_TTL_SECONDS, maximum=MAX_TTL_SECONDS
        ),
    )
    if friends is not None and player_id in friends:  # the path's player: no schema says it
        raise Unprocessable("friends cannot list the player itself", field="friends")
    return request


def check_watchable(board: BoardConfig, period_kind: str, region: str | None) -> None:
    """Unprocessable (422) for a channel the board does not have, or a board whose ranks are
    counted across shards (player channels are not offered there yet)."""
    if period_kind not in board.periods:
        raise Unprocessable(
            f"board {board.board_id!r} keeps no {period_kind} periods", field="period"
        )
    if region is not None and region not in (board.regions or ()):
        raise Unprocessable(f"board {board.board_id!r} has no region {region!r}", field="region")
    if board.shards > 1:
        raise Unprocessable(
            "player channels are not offered on sharded boards yet", field="board_id"
        )
