"""The serving index: boards, scores and ranks in Redis/Valkey sorted sets.

Layout, every key of a board under the hash tag `{board}` so one script can touch them all:
  lb:{b}:cfg            compact board rules read by the scripts (JSON)
  lb:{b}:range          "lo hi": bounds of every score on the board (blind increments)
  lb:{b}:z:<period>[:R] sorted set of one period (and region R): member -> score
  lb:{b}:zh:<period>[:R] its shadow: the entries of hidden players (lua_shared/hidden.lua)
  lb:{b}:m:<period>[:R] ties=first and tie-breaker boards: player -> member (member = a
                        prefix ending in '|' (score and tie keys, arrival), then the player)
  lb:{b}:hidden         hidden players: player -> when hidden (ms); while it has one, the cfg
                        text ends with a space (lua_shared/hidden.lua)
  lb:{b}:meta           player -> metadata JSON
  lb:{b}:refs           player -> number of sorted sets holding the player (no orphan metadata)
  lb:{b}:keys           registry of the board's sorted-set suffixes
  lb:{b}:seq            per-board version counter (every event's version)
  lb:{b}:idem:<h>       idempotency record (fingerprint + result), expires
  lb:{b}:rl:<player>    rate-limit token bucket, expires
  lb:{b}:outbox         stream of events not yet confirmed in PostgreSQL (drained by the relay)
  lb:{b}:joined[:<w>]   a tournament's participants (a recurring tournament's per window w)
  lb:{b}:attempts[:<w>] a tournament's accepted submissions, player -> count, '~' -> all (per w)
  lb:{b}:windows        a recurring tournament's windows holding those keys, until the
                        rollover removes them once the window is over (and archived)
  lb:{b}:wake           shard pub/sub channel (not a key) the outbox's writers wake the live
                        publisher on (lua_shared/wake.lua)
  lb:boards             catalog: board_id -> public board JSON (one key, for GET /boards)

Reads take a board's entries from its own keys or, on a sharded board, from its shards' (each
a board name of its own: `key_spaces`, `player_key_space`).
"""

from __future__ import annotations

import hashlib
import json

from leaderboard.domain.shards import shard_board_id, shard_board_ids, shard_of

CATALOG_KEY = "lb:boards"
# Boards with custom periods -> when the rollover next has work on them (ms): a period ends, or
# an archived one's retention runs out. A run every minute reads only the boards that are due.
ROLLOVER_DUE_KEY = "lb:rollover-due"

# The live publisher's control channel (a shard pub/sub channel, not a key) and what a message
# on it says: the catalog changed (a board published or edited), a newer run waits to take over.
LIVE_CONTROL_CHANNEL = "lb:live:control"
CATALOG_CHANGED = "catalog"
HAND_OVER = "hand-over"

# Outbox entries for the live publisher alone (visibility.lua, delete_player.lua): the admin
# routes record these in PostgreSQL themselves, so the relay trims them without sending them.
LIVE_ONLY_OPERATIONS = frozenset({"hide", "unhide", "remove"})


def key_spaces(board_id: str, shards: int) -> list[str]:
    """The names whose keys hold the board's entries: the board's own, or its shards'."""
    return [board_id] if shards <= 1 else shard_board_ids(board_id, shards)


def all_key_spaces(board_id: str, shards: int) -> list[str]:
    """Every name with keys of the board: its own (its rules) and, sharded, its shards'."""
    return [board_id, *(shard_board_ids(board_id, shards) if shards > 1 else ())]


def player_key_space(board_id: str, player_id: str, shards: int) -> str:
    """The name whose keys hold one player's entries: the board's own, or the player's shard."""
    return (
        board_id if shards <= 1 else shard_board_id(board_id, shard_of(player_id, shards), shards)
    )


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
        """player -> watch, for a channel's every period (lua_shared/standing.lua: watch_decode)"""
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
        """player -> the teams the player contributed to ("a,b": lua_shared/teams.lua)"""
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
    def wake(self) -> str:
        """The shard channel the outbox's writers publish on (lua_shared/wake.lua)."""
        return self.prefix + "wake"

    @property
    def archived(self) -> str:
        return self.prefix + "archived"

    def joined(self, window_id: str | None = None) -> str:
        """A tournament's participants: a one-shot tournament's, or one window's of a recurring
        tournament (lua_shared/tournament.lua)."""
        return f"{self.prefix}joined:{window_id}" if window_id else self.prefix + "joined"

    def attempts(self, window_id: str | None = None) -> str:
        """player -> accepted submissions, as `joined`."""
        return f"{self.prefix}attempts:{window_id}" if window_id else self.prefix + "attempts"

    @property
    def tournament_windows(self) -> str:
        """A recurring tournament's windows whose `joined`/`attempts` keys are still held."""
        return self.prefix + "windows"

    def idempotency(self, subject: str, key: str) -> str:
        digest = hashlib.sha256(json.dumps([subject, key]).encode()).hexdigest()[:40]
        return f"{self.prefix}idem:{digest}"

    def rate(self, player_id: str) -> str:
        return f"{self.prefix}rl:{player_id}"
