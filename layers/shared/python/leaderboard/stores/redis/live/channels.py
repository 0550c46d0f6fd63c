"""The live publisher's view of a board on a read (its channels) and what a read found on it
(its changes), with the keys the publisher keeps in Redis; shared by the one-node and the
sharded readers of changes."""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.domain.leagues import League
from leaderboard.domain.live import Channel, ChannelUpdate, PlayerUpdate
from leaderboard.domain.score_tiers import Tiering
from leaderboard.stores.redis.keys import BoardKeys, key_spaces

LEASE_KEY = "lb:live:lease"
# The watches one call ranks again on one channel at most (the rest wait for the next call):
# what bounds a read's script when a change crosses many watched ranks (docs/cost.md).
DEFAULT_WATCH_CHECKS = 2000
# Watched ranks outlive any watch (a day at most) by this much.
WATCHED_RANKS_SECONDS = 2 * 86_400
SUCCESSOR_KEY = "lb:live:successor"
# board id -> when (epoch ms) its channels may have their next message: what a run that ends
# leaves the next one, so a hand-over never brings two messages closer than 1/rate
NEXT_DUE_KEY = "lb:live:due"


def live_state_key(board_id: str) -> str:
    return BoardKeys(board_id).prefix + "live"


@dataclass(frozen=True, slots=True)
class BoardChannels:
    """One board as the publisher sees it on a read: its channels and how many top entries."""

    board_id: str
    channels: tuple[Channel, ...]
    top: int
    shards: int = 1
    tiering: Tiering | None = None  # the board's score tiers, named in its messages
    league: League | None = None  # a league board's: player messages name the group rank


def wake_channels(board_id: str, shards: int) -> list[str]:
    """The shard channels a board's writes wake the publisher on: its own, or its shards'."""
    return [BoardKeys(name).wake for name in key_spaces(board_id, shards)]


@dataclass(frozen=True, slots=True)
class BoardChanges:
    board_id: str
    updates: tuple[ChannelUpdate, ...]
    entries_read: int = 0
    skipped: int = 0
    player_updates: tuple[PlayerUpdate, ...] = ()
