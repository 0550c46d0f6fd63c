"""One round of a sharded board's read: shard_read.lua on every shard touched, in one pipeline
(one round trip per node), and the pieces each read builds from its replies."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from redis.exceptions import NoScriptError

from leaderboard.domain.periods import Period
from leaderboard.domain.read_results import Entry
from leaderboard.domain.shards import (
    Placed,
    Run,
    order_key,
    shard_board_id,
    shard_board_ids,
    shard_of,
    strip_member,
)
from leaderboard.domain.validation import format_score
from leaderboard.stores.redis.board_reads import StaleRules
from leaderboard.stores.redis.client import RedisLike, queue_script
from leaderboard.stores.redis.errors import read_error
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.rules import WriteRules
from leaderboard.stores.redis.scripts import load_script, script_sha

Sets = list[tuple[str, str | None]]  # (period id, region) of the sorted sets a read touches


@dataclass(frozen=True, slots=True)
class HiddenReader:
    """A reader the board hides: their metadata and own entries (member, score) by set."""

    player: str
    meta: str
    entries: dict[tuple[str, str | None], tuple[str, float]]


class ShardRounds:
    def __init__(self, client: RedisLike) -> None:
        self.client = client
        self._source = load_script(__package__ or "", "shard_read")
        self._sha = script_sha(self._source)
        self.rounds = 0  # rounds sent, for the round-trip tests and benchmarks

    # --- one round ----------------------------------------------------------------------
    def _round(self, calls: list[tuple[list[str], list[Any]]]) -> list[list[Any]]:
        """One pipeline of shard_read.lua calls (one round trip per node)."""
        for attempt in range(2):
            pipe = self.client.pipeline(transaction=False)
            for keys, args in calls:
                queue_script(pipe, self.client, self._sha, keys, args)
            self.rounds += 1
            replies = pipe.execute(raise_on_error=False)
            if attempt == 0 and any(isinstance(r, NoScriptError) for r in replies):
                self.client.script_load(self._source)  # a restarted node
                continue
            for reply in replies:
                if isinstance(reply, Exception):
                    raise reply
                if reply[0] == "STALE":
                    raise StaleRules(reply[1])
                if reply[0] == "ERR":
                    raise Missing(reply[1])
            return replies
        raise RuntimeError("the shard read script could not be loaded")

    @staticmethod
    def _head(rules: WriteRules, shard: str, op: str) -> tuple[list[str], list[Any]]:
        keys = BoardKeys(shard)
        return (
            [keys.cfg, keys.meta, keys.archived],
            [op, rules.text, "1" if rules.desc else "", "1" if rules.first else ""],
        )

    def _shards(self, board_id: str, rules: WriteRules) -> list[str]:
        return shard_board_ids(board_id, rules.shards)

    @staticmethod
    def _check_scope(board_id: str, rules: WriteRules, period: Period, region: str | None) -> None:
        if period.kind not in rules.periods:
            raise read_error(board_id, period, region, "", "no_period")
        if region and region not in rules.regions:
            raise read_error(board_id, period, region, "", "unknown_region")

    # --- runs ---------------------------------------------------------------------------
    def _runs(
        self,
        board_id: str,
        rules: WriteRules,
        period: Period,
        region: str | None,
        low: int,
        high: int,
        with_meta: bool,
        extra: Sequence[tuple[list[str], list[Any]]] = (),
    ) -> tuple[list[Run], dict[str, str], bool, list[Any]]:
        """Every shard's run, and the replies of `extra` calls sent in the same round."""
        calls = list(extra)
        for shard in self._shards(board_id, rules):
            keys, args = self._head(rules, shard, "range")
            keys.append(BoardKeys(shard).zset(period.id, region))
            calls.append((keys, [*args, low, high, "1" if with_meta else "", period.id]))
        runs: list[Run] = []
        metas: dict[str, str] = {}
        archived = False
        replies = self._round(calls)
        for reply in replies[len(extra) :]:
            archived = archived or bool(int(reply[1]))
            run, meta = parse_run(reply, 2, with_meta, rules.keyed)
            runs.append(run)
            metas.update(meta)
        return runs, metas, archived, replies[: len(extra)]

    # --- the hidden reader ----------------------------------------------------------------
    def _viewer_call(
        self, board_id: str, rules: WriteRules, viewer: str, sets: Sets
    ) -> tuple[list[str], list[Any]]:
        """The call that asks the reader's shard whether it hides them (and for their own
        entries on `sets` if so), to send with a read's first round."""
        shard = shard_board_id(board_id, shard_of(viewer, rules.shards), rules.shards)
        keys, args = self._head(rules, shard, "viewer")
        shard_keys = BoardKeys(shard)
        for period_id, region in sets:
            keys.append(shard_keys.zset(period_id, region))
            if rules.keyed:
                keys.append(shard_keys.members(period_id, region))
        return keys, [*args, viewer, *(p for p, _ in sets)]

    @staticmethod
    def _hidden_reader(viewer: str, reply: list[Any], sets: Sets) -> HiddenReader | None:
        if reply[1] != "1":
            return None
        entries = {}
        for i, where in enumerate(sets):
            member, score = reply[3 + 2 * i : 5 + 2 * i]
            if member:
                entries[where] = (member, float(score))
        return HiddenReader(viewer, reply[2], entries)

    def _reader_entry(
        self, rules: WriteRules, reader: HiddenReader, member: str, score: float, better: int
    ) -> Entry:
        return Entry(
            rank=better + 1,
            player_id=reader.player,
            score=format_score(score),
            metadata=json.loads(reader.meta) if reader.meta else None,
            tiebreakers=rules.member_tiebreakers(member),
            hidden=True,
        )

    def _metadata(self, board_id: str, rules: WriteRules, members: list[str]) -> dict[str, str]:
        """One round: the metadata of chosen players, from the shard of each."""
        by_shard: dict[int, list[str]] = defaultdict(list)
        for member in members:
            player = strip_member(member, rules.keyed)
            by_shard[shard_of(player, rules.shards)].append(player)
        pipe = self.client.pipeline(transaction=False)
        order = []
        for shard, players in by_shard.items():
            pipe.hmget(BoardKeys(shard_board_id(board_id, shard, rules.shards)).meta, players)
            order.append(players)
        self.rounds += 1
        found: dict[str, str] = {}
        for players, values in zip(order, pipe.execute(), strict=True):
            found.update({p: v for p, v in zip(players, values, strict=True) if v})
        return found

    def _entries(
        self, placed: list[Placed], metas: dict[str, str], rules: WriteRules
    ) -> tuple[Entry, ...]:
        out = []
        for entry in placed:
            player = strip_member(entry.member, rules.keyed)
            meta = metas.get(player)
            out.append(
                Entry(
                    rank=entry.rank,
                    player_id=player,
                    score=format_score(entry.score),
                    metadata=json.loads(meta) if meta else None,
                    tiebreakers=rules.member_tiebreakers(entry.member),
                )
            )
        return tuple(out)

    # --- windows ------------------------------------------------------------------------


class Missing(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def parse_run(
    reply: list[Any], at: int, with_meta: bool, keyed: bool
) -> tuple[Run, dict[str, str]]:
    total, start, better, count = (int(x) for x in reply[at : at + 4])
    flat = reply[at + 4 : at + 4 + 2 * count]
    rows = tuple((flat[i], float(flat[i + 1])) for i in range(0, len(flat), 2))
    metas: dict[str, str] = {}
    if with_meta and count:
        values = reply[at + 4 + 2 * count : at + 4 + 3 * count]
        for (member, _), value in zip(rows, values, strict=True):
            if value:
                metas[strip_member(member, keyed)] = value
    return Run(start, rows, better, total), metas


def member_order(desc: bool) -> Callable[[str, int | float], tuple[Any, ...]]:
    key = order_key(desc)
    return lambda member, score: key((member, float(score)))
