"""Reads of sharded boards: each shard's part in one script call, the parts merged exactly.

A read takes a fixed number of rounds, each one pipeline (redis-py sends a cluster pipeline to
every node at once, so a round is one round trip per node touched):
  top of the board          1 round   every shard's top n, with metadata
  page at an offset         2 rounds  runs around offset/K on every shard, then the metadata of
                                      the page; a run that misses the page (rare: players are
                                      spread by a hash) costs one more round, twice at most
  around a rank             as a page
  one player, around one,   2 rounds  the player's shard finds it, then every shard counts the
  many players, standings             members before it (and, around it, sends its run there)
The arithmetic is leaderboard/domain/shards.py; the shard's side is sharded/shard_read.lua.

A read for a player (`viewer`) asks the player's shard in its first round whether it hides
them (one more script call in the same pipeline: no extra round). Only when it does are their
own entries put back in their view (leaderboard/domain/self_view.py), at the cost of counting
where they would stand and, for a page or window, of reading it again around them.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import replace
from typing import Any

from leaderboard.domain.errors import ArchivedPeriod
from leaderboard.domain.periods import CUSTOM, Period
from leaderboard.domain.read_results import Entry, PeriodStanding, Selection, Window
from leaderboard.domain.self_view import shifted
from leaderboard.domain.shards import (
    shard_board_id,
    shard_of,
)
from leaderboard.domain.validation import format_score
from leaderboard.stores.redis.errors import read_error
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.records import CustomPeriodsKept
from leaderboard.stores.redis.rules import WriteRules
from leaderboard.stores.redis.sharded.positions import ShardPositions
from leaderboard.stores.redis.sharded.rounds import Missing, member_order


class ShardedIndex(ShardPositions):
    """The sharded layout of `board_reads.BoardReads`."""

    def window(
        self,
        board_id: str,
        rules: WriteRules | None,
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
        rules = _known(rules)
        if ranks:  # a sharded board keeps no teams
            raise read_error(board_id, period, region, player_id, "no_teams")
        self._check_scope(board_id, rules, period, region)
        try:
            if op in ("page", "around_rank"):
                found = self._cut(board_id, rules, period, region, op, size, offset_or_rank, viewer)
            else:
                found = self._around_player(
                    board_id, rules, period, region, op, size, player_id, viewer
                )
        except Missing as missing:
            code = missing.code
            raise read_error(board_id, period, region, player_id, code, rules.tiering) from None
        return replace(found, tiering=rules.tiering)

    def players(
        self,
        board_id: str,
        rules: WriteRules | None,
        period: Period,
        region: str | None,
        player_ids: list[str],
        *,
        viewer: str = "",
        ranks: str = "",
    ) -> Selection:
        rules = _known(rules)
        if ranks:  # a sharded board keeps no teams
            raise read_error(board_id, period, region, "", "no_teams")
        self._check_scope(board_id, rules, period, region)
        where = (period.id, region)
        try:
            by_shard: dict[int, list[str]] = defaultdict(list)
            for player in dict.fromkeys(player_ids):
                by_shard[shard_of(player, rules.shards)].append(player)
            calls, asked = [], []
            for shard, players in by_shard.items():
                name = shard_board_id(board_id, shard, rules.shards)
                keys, args = self._head(rules, name, "findmany")
                keys.append(BoardKeys(name).zset(period.id, region))
                if rules.keyed:
                    keys.append(BoardKeys(name).members(period.id, region))
                calls.append((keys, [*args, period.id, *players]))
                asked.append(players)
            if viewer:
                calls.append(self._viewer_call(board_id, rules, viewer, [where]))
            replies = self._round(calls)
            reader = self._hidden_reader(viewer, replies[-1], [where]) if viewer else None
            mine = reader.entries.get(where) if reader is not None else None
            found: list[tuple[str, str, float, str]] = []  # player, member, score, metadata
            for players, reply in zip(asked, replies, strict=False):
                for i, player in enumerate(players):
                    member, score, meta = reply[2 + 3 * i : 5 + 3 * i]
                    if member:
                        found.append((player, member, float(score), meta))
            if mine is not None and reader is not None:  # the hidden reader, in their own view
                found = [f for f in found if f[0] != reader.player]
            queries = [(period.id, region, member, score) for _, member, score, _ in found]
            if mine is not None:
                queries.append((period.id, region, *mine))
            if not queries:  # still one round for the size of the board
                runs, _, archived, _ = self._runs(board_id, rules, period, region, 0, 0, False)
                total = sum(run.total for run in runs)
                if total == 0 and archived:
                    raise ArchivedPeriod(
                        f"period {period.id} is archived", tiering=rules.tiering, period=period.id
                    )
                return Selection(total=total, entries=(), tiering=rules.tiering)
            shards = self._count(board_id, rules, queries)
        except Missing as missing:
            raise read_error(board_id, period, region, "", missing.code, rules.tiering) from None
        total = sum(parts[0][0] for parts in shards)
        key = member_order(rules.desc)
        entries: list[tuple[Any, Entry]] = []
        for q, (player, member, score, meta) in enumerate(found):
            entry = Entry(
                rank=sum(parts[q][1] for parts in shards) + 1,
                player_id=player,
                score=format_score(score),
                metadata=json.loads(meta) if meta else None,
                tiebreakers=rules.member_tiebreakers(member),
            )
            entries.append((key(member, score), entry))
        if mine is not None and reader is not None:
            me = self._reader_entry(rules, reader, *mine, sum(p[-1][1] for p in shards))
            at = key(*mine)
            entries = [(k, shifted(e, me, rules.first) if at < k else e) for k, e in entries]
            if reader.player in player_ids:
                entries.append((at, me))
            total += 1
        entries.sort(key=lambda item: item[0])
        return Selection(total=total, entries=tuple(e for _, e in entries), tiering=rules.tiering)

    def standings(
        self,
        board_id: str,
        rules: WriteRules | None,
        player_id: str,
        periods: list[Period],
        region: str | None,
        *,
        viewer: str = "",
    ) -> list[PeriodStanding]:
        rules = _known(rules)
        if rules.calendar is not None and all(p.kind != CUSTOM for p in periods):
            raise CustomPeriodsKept(rules.calendar)
        if region and region not in rules.regions:
            raise read_error(board_id, periods[0], region, player_id, "unknown_region")
        regions: list[str | None] = [None, region] if region else [None, *rules.region_order]
        kept = [p for p in periods if p.kind in rules.periods]
        sets = [(p.id, r) for r in regions for p in kept]
        try:
            _, found, _, reader = self._find(board_id, rules, player_id, sets, viewer)
            own = reader is not None and player_id == viewer
            if own and reader is not None:  # a hidden player's own standings: from the shadows
                found = [reader.entries.get(where) for where in sets]
            hits = [(i, f) for i, f in enumerate(found) if f is not None]
            if not hits:
                return []
            queries = [(sets[i][0], sets[i][1], f[0], f[1]) for i, f in hits]
            # another player, read by a hidden one: where the reader's own entries stand too
            theirs = {} if own or reader is None else reader.entries
            extra = [
                (sets[i][0], sets[i][1], *theirs[sets[i]]) for i, _ in hits if sets[i] in theirs
            ]
            shards = self._count(board_id, rules, queries + extra)
        except Missing as missing:
            raise read_error(board_id, periods[0], region, player_id, missing.code) from None
        key = member_order(rules.desc)
        out = []
        n_extra = 0
        for q, (i, (member, score)) in enumerate(hits):
            period = kept[i % len(kept)]
            standing = PeriodStanding(
                kind=period.kind,
                period=period.id,
                region=sets[i][1],
                rank=sum(parts[q][1] for parts in shards) + 1,
                score=format_score(score),
                total=sum(parts[q][0] for parts in shards) + (1 if own else 0),
                tiebreakers=rules.member_tiebreakers(member),
                hidden=own,
                tiering=rules.tiering,
            )
            if sets[i] in theirs and reader is not None:
                mine = theirs[sets[i]]
                at = len(queries) + n_extra
                n_extra += 1
                me = self._reader_entry(rules, reader, *mine, sum(p[at][1] for p in shards))
                if key(*mine) < key(member, score):
                    moved = shifted(
                        Entry(standing.rank, player_id, standing.score, None, standing.tiebreakers),
                        me,
                        rules.first,
                    )
                    standing = replace(standing, rank=moved.rank)
                standing = replace(standing, total=standing.total + 1)
            out.append(standing)
        return out


def _known(rules: WriteRules | None) -> WriteRules:
    if rules is None:  # the caller reads a sharded board by the rules that said so
        raise RuntimeError("a sharded board is read with its rules")
    return rules
