"""Sharded boards: one board's players split over K sorted sets, ranks counted across them.

A board with `shards: K > 1` keeps each player on one shard, chosen by a hash of the player id,
so every write stays one script on one node. A shard is laid out exactly like an unsharded
board under its own hash tag (`{board.s}`, salted to a slot of its own range: see
`shard_board_id`), so Redis Cluster places the K shards on different nodes. Reads merge the
shards: a player's rank is one plus the members every shard holds before it, a page is cut
from the shards' runs around it.

This module is the arithmetic of that merge, with no store in it: which shard holds a player,
and how runs of consecutive entries fetched from each shard combine into exact global
positions and ranks.
"""

from __future__ import annotations

import binascii
import functools
import math
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

MAX_SHARDS = 256
# ties=first on a sharded board: equal scores order by an arrival stamp (microseconds since
# 2020-01-01 on the API host's clock, then the item's place in its batch) written in front of
# the player id, as the per-board version is on an unsharded board.
STAMP_EPOCH_US = 1_577_836_800_000_000
STAMP_DIGITS = 18  # 15 digits of microseconds (until 2051), 3 of batch position
STAMP_MAX = 10**STAMP_DIGITS - 1


def shard_of(player_id: str, shards: int) -> int:
    """The shard that holds a player: stable across processes and releases."""
    if shards <= 1:
        return 0
    return zlib.crc32(player_id.encode()) % shards


CLUSTER_SLOTS = 16384


def key_slot(tag: str) -> int:
    """The Redis Cluster slot of keys with this hash tag (CRC16/XMODEM of the tag, mod 16384)."""
    return binascii.crc_hqx(tag.encode(), 0) % CLUSTER_SLOTS


@functools.lru_cache(maxsize=8192)
def shard_board_id(board_id: str, shard: int, shards: int) -> str:
    """The id whose keys (`lb:{tag}:...`) hold shard `shard` of a board of `shards` shards.

    Tags differing in one character land on slots that CRC16's linearity keeps together: on a
    cluster whose slots are split evenly, `{board.0}` ... `{board.7}` used only half of 8 node
    groups. So shard s takes the first tag of `board.s`, `board.s.1`, `board.s.2`, ... whose
    slot lies in the middle quarter of the s-th of `shards` equal slot ranges: the shards of
    every board then spread over evenly split node groups as evenly as their counts allow
    (docs/architecture.md, "Sharded boards"). A dot never appears in a board id."""
    width = CLUSTER_SLOTS / shards
    low = math.floor((shard + 0.375) * width)
    high = math.ceil((shard + 0.625) * width)
    tag, salt = f"{board_id}.{shard}", 0
    while not low <= key_slot(tag) < high:
        salt += 1
        tag = f"{board_id}.{shard}.{salt}"
    return tag


def shard_board_ids(board_id: str, shards: int) -> list[str]:
    """Every shard's id, shard 0 first."""
    return [shard_board_id(board_id, s, shards) for s in range(shards)]


def arrival_number(stamp_us: int, position: int) -> int:
    """An arrival as one integer: what the record keeps to order a sharded board's ties."""
    return (stamp_us - STAMP_EPOCH_US) * 1000 + position


def arrival_prefix(stamp_us: int, position: int, desc: bool) -> str:
    """The member prefix that makes an earlier arrival rank first among equal scores."""
    return stamp_prefix(arrival_number(stamp_us, position), desc)


def stamp_prefix(number: int, desc: bool) -> str:
    """Members of equal score sort by their bytes, ascending on asc boards and descending on
    desc ones (ZREVRANGE): the prefix of an arrival number, inverted on desc boards."""
    return f"{STAMP_MAX - number if desc else number:0{STAMP_DIGITS}d}|"


def strip_member(member: str, keyed: bool) -> str:
    """The player id of a sharded board's member (`keyed`: members carry a prefix ending in
    '|', on ties=first and tie-breaker boards; player ids never contain '|')."""
    return member.partition("|")[2] if keyed else member


@dataclass(frozen=True, slots=True)
class Run:
    """Consecutive entries of one shard's sorted set, in board order.

    `start` is the shard-local position of rows[0]; `better` is how many of the shard's
    members have a strictly better score than rows[0] (ties=first: `start` itself); `total` is
    the shard's size. A run with no rows is a shard with nothing at or after `start`."""

    start: int
    rows: tuple[tuple[str, float], ...]
    better: int
    total: int

    @property
    def exhausted(self) -> bool:
        return self.start + len(self.rows) >= self.total


@dataclass(frozen=True, slots=True)
class Placed:
    """An entry of the merged board: global position (0-based), rank, member, score."""

    position: int
    rank: int
    member: str
    score: float


def order_key(desc: bool) -> Callable[[tuple[str, float]], tuple[Any, ...]]:
    """Board order of (member, score) rows as one sorted set orders them: by score, then by
    member bytes, both descending on desc boards (ZREVRANGE) and ascending on asc ones."""
    if desc:
        return lambda row: (-row[1], _Reversed(row[0]))
    return lambda row: (row[1], row[0])


class _Reversed:
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __lt__(self, other: _Reversed) -> bool:
        return self.text > other.text

    def __gt__(self, other: _Reversed) -> bool:
        return self.text < other.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)


def merge_runs(runs: Sequence[Run], desc: bool, first: bool, group: int = 0) -> list[Placed]:
    """The entries whose global positions the runs prove, in board order, with their ranks.
    `group` > 0 (tie-breaker boards): equal tuples are members whose first `group` characters
    (score and tie keys, in board byte order) are equal, not equal scores.

    Every entry of every shard that lies between `lo` (the latest first row of the runs that
    do not start at the shard's top) and `hi` (the earliest last row of the runs that do not
    reach the shard's end) was fetched, so that stretch of the merged rows is a contiguous
    stretch of the board, and everything before it is counted by the runs' starts."""
    key = order_key(desc)
    merged = sorted(
        ((key(row), n, row) for n, run in enumerate(runs) for row in run.rows),
        key=lambda item: item[0],
    )
    lo = max((key(run.rows[0]) for run in runs if run.start > 0 and run.rows), default=None)
    hi = min((key(run.rows[-1]) for run in runs if not run.exhausted and run.rows), default=None)
    if any(run.start > 0 and not run.rows and run.total > 0 for run in runs):
        return []  # a shard whose entries all lie before its run: nothing is proven
    region = [
        item
        for item in merged
        if (lo is None or not item[0] < lo) and (hi is None or not hi < item[0])
    ]
    if not region:
        return []
    head_key = region[0][0]
    position = sum(run.start for run in runs if run.rows) + sum(
        1 for item in merged if item[0] < head_key
    )
    placed: list[Placed] = []
    for offset, (_, _, (member, score)) in enumerate(region):
        at = position + offset
        if first:
            rank = at + 1
        elif placed and _tuple(placed[-1].member, placed[-1].score, group) == _tuple(
            member, score, group
        ):
            rank = placed[-1].rank
        elif placed:
            rank = at + 1  # the first of its score in a contiguous stretch
        else:
            rank = 1 + _better_than(runs, _tuple(member, score, group), desc, group)
        placed.append(Placed(at, rank, member, score))
    return placed


def _tuple(member: str, score: float, group: int) -> float | str:
    """What ranks compare: the score, or on tie-breaker boards the member's score-and-tie key
    (whose byte order is the board's order)."""
    return member[:group] if group else score


def _better_than(runs: Sequence[Run], value: float | str, desc: bool, group: int = 0) -> int:
    """Members of the whole board with a score (tuple) strictly better than `value`, one of
    the proven stretch (each run's first row is then at or before it)."""
    count = 0
    for run in runs:
        if not run.rows:
            continue
        values = [_tuple(m, s, group) for m, s in run.rows]
        if values[0] == value:
            count += run.better
        else:
            count += run.start + sum(1 for v in values if _better(v, value, desc))
    return count


def _better(a: float | str, b: float | str, desc: bool) -> bool:
    """Whether `a` ranks strictly above `b` (two scores, or two tuple keys)."""
    if isinstance(a, str) or isinstance(b, str):
        a, b = str(a), str(b)
        return a > b if desc else a < b
    return a > b if desc else a < b


def covers(placed: Sequence[Placed], start: int, stop: int, total: int) -> bool:
    """Whether the proven stretch holds every position of [start, stop) that exists."""
    stop = min(stop, total)
    if stop <= start:
        return True
    if not placed:
        return False
    return placed[0].position <= start and placed[-1].position >= stop - 1


def run_bounds(start: int, stop: int, shards: int, attempt: int) -> tuple[int, int]:
    """The shard-local positions [a, b] to fetch from every shard for global positions
    [start, stop). Players are spread over the shards by a hash, so the global position p
    sits near p/K on each shard, give or take a few square roots of p/K: attempt 0 fetches
    that margin, attempt 1 four times it, and the last attempt everything down to `stop`,
    which always covers (no shard holds more than `stop` of the first `stop` entries)."""
    if attempt >= 2 or shards == 1 or start == 0:
        return 0, max(stop - 1, 0)
    expected = start / shards
    margin = int((4 if attempt == 0 else 16) * math.sqrt(expected + 1)) + 8
    low = max(0, int(expected) - margin)
    high = math.ceil(stop / shards) + margin
    return low, max(high, low)
