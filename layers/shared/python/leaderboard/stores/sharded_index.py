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
The arithmetic is leaderboard/domain/shards.py; the shard's side is lua/shard_read.lua.

A read for a player (`viewer`) asks the player's shard in its first round whether it hides
them (one more script call in the same pipeline: no extra round). Only when it does are their
own entries put back in their view (leaderboard/stores/self_view.py), at the cost of counting
where they would stand and, for a page or window, of reading it again around them.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from redis.exceptions import NoScriptError

from leaderboard.domain.errors import ArchivedPeriod
from leaderboard.domain.periods import Period
from leaderboard.domain.shards import (
    Placed,
    Run,
    covers,
    merge_runs,
    order_key,
    run_bounds,
    shard_board_id,
    shard_board_ids,
    shard_of,
    strip_member,
)
from leaderboard.domain.validation import format_score
from leaderboard.stores.redis_client import RedisLike, queue_script
from leaderboard.stores.redis_index import (
    BoardKeys,
    Entry,
    PeriodStanding,
    Selection,
    Window,
    WriteRules,
    _read_error,
    _script,
)
from leaderboard.stores.self_view import self_window, shifted

Sets = list[tuple[str, str | None]]  # (period id, region) of the sorted sets a read touches


@dataclass(frozen=True, slots=True)
class _HiddenReader:
    """A reader the board hides: their metadata and own entries (member, score) by set."""

    player: str
    meta: str
    entries: dict[tuple[str, str | None], tuple[str, float]]


class StaleRules(Exception):
    """A shard holds other rules than the caller's: reload them (`text`) and read again."""

    def __init__(self, text: str) -> None:
        super().__init__("board rules changed")
        self.text = text


class ShardedIndex:
    def __init__(self, client: RedisLike) -> None:
        self.client = client
        self._source = _script("shard_read")
        self._sha = hashlib.sha1(self._source.encode(), usedforsecurity=False).hexdigest()
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
                    raise _Missing(reply[1])
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
            raise _read_error(board_id, period, region, "", "no_period")
        if region and region not in rules.regions:
            raise _read_error(board_id, period, region, "", "unknown_region")

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
            run, meta = _parse_run(reply, 2, with_meta, rules.keyed)
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
    def _hidden_reader(viewer: str, reply: list[Any], sets: Sets) -> _HiddenReader | None:
        if reply[1] != "1":
            return None
        entries = {}
        for i, where in enumerate(sets):
            member, score = reply[3 + 2 * i : 5 + 2 * i]
            if member:
                entries[where] = (member, float(score))
        return _HiddenReader(viewer, reply[2], entries)

    def _reader_entry(
        self, rules: WriteRules, reader: _HiddenReader, member: str, score: float, better: int
    ) -> Entry:
        return Entry(
            rank=better + 1,
            player_id=reader.player,
            score=format_score(score),
            metadata=json.loads(reader.meta) if reader.meta else None,
            tiebreakers=rules.member_tiebreakers(member),
            hidden=True,
        )

    def _own_window(
        self,
        board_id: str,
        rules: WriteRules,
        period: Period,
        region: str | None,
        reader: _HiddenReader,
        *,
        op: str,
        size: int,
        offset_or_rank: int = 0,
        around: tuple[str, float] | None = None,
    ) -> Window:
        """A window of the hidden reader's own view (self_view): where their entry would stand
        (one round), then the visible board around it. `around`: the (member, score) of
        another player a window is centred on."""
        member, score = reader.entries[(period.id, region)]
        queries = [(period.id, region, member, score)]
        if around is not None:
            queries.append((period.id, region, *around))
        shards = self._count(board_id, rules, queries, positions=True)
        total = sum(parts[0][0] for parts in shards)
        place = sum(parts[0][2] for parts in shards)
        me = self._reader_entry(rules, reader, member, score, sum(p[0][1] for p in shards))
        around_position = sum(parts[1][2] for parts in shards) if around is not None else None

        def visible(start: int, stop: int) -> tuple[Entry, ...]:
            return self._cut(board_id, rules, period, region, "page", stop - start, start).entries

        return self_window(
            op=op,
            size=size,
            offset_or_rank=offset_or_rank,
            me=me,
            place=place,
            visible_total=total,
            first=rules.first,
            visible=visible,
            around_position=around_position,
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
    def window(
        self,
        board_id: str,
        rules: WriteRules,
        period: Period,
        region: str | None,
        *,
        op: str,
        size: int,
        offset_or_rank: int = 0,
        player_id: str = "",
        viewer: str = "",
    ) -> Window:
        self._check_scope(board_id, rules, period, region)
        try:
            if op in ("page", "around_rank"):
                return self._cut(board_id, rules, period, region, op, size, offset_or_rank, viewer)
            return self._around_player(board_id, rules, period, region, op, size, player_id, viewer)
        except _Missing as missing:
            raise _read_error(board_id, period, region, player_id, missing.code) from None

    def _cut(
        self,
        board_id: str,
        rules: WriteRules,
        period: Period,
        region: str | None,
        op: str,
        size: int,
        offset_or_rank: int,
        viewer: str = "",
    ) -> Window:
        """A page at an offset, or the window centred on a rank."""
        start = offset_or_rank if op == "page" else max(0, offset_or_rank - 1 - (size - 1) // 2)
        sets = [(period.id, region)]
        for attempt in range(3):
            low, high = run_bounds(start, start + size, rules.shards, attempt)
            top = low == 0 and high < size
            extra = [self._viewer_call(board_id, rules, viewer, sets)] if viewer else []
            runs, metas, archived, asked = self._runs(
                board_id, rules, period, region, low, high, with_meta=top, extra=extra
            )
            total = sum(run.total for run in runs)
            if total == 0 and archived:
                raise ArchivedPeriod(f"period {period.id} is archived", period=period.id)
            reader = self._hidden_reader(viewer, asked[0], sets) if asked else None
            if reader is not None and sets[0] in reader.entries:
                return self._own_window(
                    board_id,
                    rules,
                    period,
                    region,
                    reader,
                    op=op,
                    size=size,
                    offset_or_rank=offset_or_rank,
                )
            viewer = ""  # not hidden: the next attempts need not ask again
            if op == "around_rank":
                start = _centre(offset_or_rank - 1, size, total)
            placed = merge_runs(runs, rules.desc, rules.first, rules.group)
            if covers(placed, start, start + size, total):
                chosen = [p for p in placed if start <= p.position < start + size]
                if not top and chosen:
                    metas = self._metadata(board_id, rules, [p.member for p in chosen])
                return Window(
                    total=total,
                    start=start,
                    player_position=None,
                    entries=self._entries(chosen, metas, rules),
                )
        raise RuntimeError("a sharded read did not converge")  # run_bounds' last attempt covers

    def _find(
        self,
        board_id: str,
        rules: WriteRules,
        player_id: str,
        sets: Sets,
        viewer: str = "",
    ) -> tuple[str, list[tuple[str, float] | None], list[bool], _HiddenReader | None]:
        """Round 1: a player's (member, score) on each of `sets` (period id, region), from its
        own shard, with its metadata and whether each missing set was archived; and, in the
        same round, whether the board hides `viewer` (their own entries, if so)."""
        shard = shard_board_id(board_id, shard_of(player_id, rules.shards), rules.shards)
        keys, args = self._head(rules, shard, "find")
        shard_keys = BoardKeys(shard)
        for period_id, region in sets:
            keys.append(shard_keys.zset(period_id, region))
            if rules.keyed:
                keys.append(shard_keys.members(period_id, region))
        calls = [(keys, [*args, player_id, *(p for p, _ in sets)])]
        if viewer:
            calls.append(self._viewer_call(board_id, rules, viewer, sets))
        replies = self._round(calls)
        reply = replies[0]
        found: list[tuple[str, float] | None] = []
        archived: list[bool] = []
        for i in range(len(sets)):
            member, score, gone = reply[2 + 3 * i : 5 + 3 * i]
            found.append((member, float(score)) if member else None)
            archived.append(bool(int(gone)))
        reader = self._hidden_reader(viewer, replies[1], sets) if viewer else None
        return reply[1], found, archived, reader

    def _count(
        self,
        board_id: str,
        rules: WriteRules,
        queries: list[tuple[str, str | None, str, float]],
        window: int = 0,
        positions: bool = False,
    ) -> list[list[tuple[int, int, int, Run | None, dict[str, str]]]]:
        """Round 2: on every shard, for each (period id, region, member, score): the set's
        size, the members before it (ties first) or with a better score, and a run around it."""
        calls = []
        for shard in self._shards(board_id, rules):
            keys, args = self._head(rules, shard, "count")
            shard_keys = BoardKeys(shard)
            sets: dict[tuple[str, str | None], int] = {}
            query_args: list[Any] = []
            for period_id, region, member, score in queries:
                if (period_id, region) not in sets:
                    sets[(period_id, region)] = len(sets) + 1
                    keys.append(shard_keys.zset(period_id, region))
                query_args += [sets[(period_id, region)], repr(score), member]
            calls.append(
                (
                    keys,
                    [
                        *args,
                        window,
                        "1" if window else "",
                        len(queries),
                        "1" if positions else "",
                        *query_args,
                    ],
                )
            )
        out = []
        for reply in self._round(calls):
            at = 1
            parts: list[tuple[int, int, int, Run | None, dict[str, str]]] = []
            for _ in queries:
                total, better, position = (int(x) for x in reply[at : at + 3])
                at += 3
                run: Run | None = None
                metas: dict[str, str] = {}
                if window:
                    run, metas = _parse_run(reply, at, True, rules.keyed)
                    at += 4 + 3 * len(run.rows)
                parts.append((total, better, position, run, metas))
            out.append(parts)
        return out

    def _around_player(
        self,
        board_id: str,
        rules: WriteRules,
        period: Period,
        region: str | None,
        op: str,
        size: int,
        player_id: str,
        viewer: str = "",
    ) -> Window:
        where = (period.id, region)
        meta, found, archived, reader = self._find(board_id, rules, player_id, [where], viewer)
        if reader is not None and where not in reader.entries:
            reader = None  # hidden, but with no entry here: the public view
        if reader is not None and player_id == viewer:
            return self._own_window(board_id, rules, period, region, reader, op=op, size=size)
        if found[0] is None:
            raise _Missing("archived" if archived[0] else "no_player")
        member, score = found[0]
        if reader is not None:  # another player, in a hidden reader's own view
            if op == "around":
                return self._own_window(
                    board_id, rules, period, region, reader, op=op, size=size, around=found[0]
                )
            mine = reader.entries[where]
            shards = self._count(
                board_id, rules, [(*where, member, score), (*where, *mine)], positions=True
            )
            entry = Entry(
                rank=sum(parts[0][1] for parts in shards) + 1,
                player_id=player_id,
                score=format_score(score),
                metadata=json.loads(meta) if meta else None,
                tiebreakers=rules.member_tiebreakers(member),
            )
            me = self._reader_entry(rules, reader, *mine, sum(p[1][1] for p in shards))
            before = _member_order(rules.desc)(mine[0], mine[1]) < _member_order(rules.desc)(
                member, score
            )
            position = sum(parts[0][2] for parts in shards) + (1 if before else 0)
            return Window(
                total=sum(parts[0][0] for parts in shards) + 1,
                start=position,
                player_position=position,
                entries=(shifted(entry, me, rules.first) if before else entry,),
            )
        window = size if op == "around" else 0
        query = [(period.id, region, member, score)]
        shards = self._count(board_id, rules, query, window, positions=op == "player")
        total = sum(parts[0][0] for parts in shards)
        better = sum(parts[0][1] for parts in shards)
        if op == "player":
            entry = Entry(
                rank=better + 1,  # ties first: the members before it; shared: strictly better
                player_id=player_id,
                score=format_score(score),
                metadata=json.loads(meta) if meta else None,
                tiebreakers=rules.member_tiebreakers(member),
            )
            position = sum(parts[0][2] for parts in shards)
            return Window(total=total, start=position, player_position=position, entries=(entry,))
        runs = [parts[0][3] for parts in shards if parts[0][3] is not None]
        metas: dict[str, str] = {}
        for parts in shards:
            metas.update(parts[0][4])
        placed = merge_runs(runs, rules.desc, rules.first, rules.group)
        at = next(p.position for p in placed if p.member == member)
        start = _centre(at, size, total)
        chosen = [p for p in placed if start <= p.position < start + size]
        return Window(
            total=total,
            start=start,
            player_position=at,
            entries=self._entries(chosen, metas, rules),
        )

    # --- many players, standings --------------------------------------------------------
    def players(
        self,
        board_id: str,
        rules: WriteRules,
        period: Period,
        region: str | None,
        player_ids: list[str],
        viewer: str = "",
    ) -> Selection:
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
                    raise ArchivedPeriod(f"period {period.id} is archived", period=period.id)
                return Selection(total=total, entries=())
            shards = self._count(board_id, rules, queries)
        except _Missing as missing:
            raise _read_error(board_id, period, region, "", missing.code) from None
        total = sum(parts[0][0] for parts in shards)
        key = _member_order(rules.desc)
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
        return Selection(total=total, entries=tuple(e for _, e in entries))

    def standings(
        self,
        board_id: str,
        rules: WriteRules,
        player_id: str,
        periods: list[Period],
        region: str | None,
        viewer: str = "",
    ) -> list[PeriodStanding]:
        if region and region not in rules.regions:
            raise _read_error(board_id, periods[0], region, player_id, "unknown_region")
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
        except _Missing as missing:
            raise _read_error(board_id, periods[0], region, player_id, missing.code) from None
        key = _member_order(rules.desc)
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


class _Missing(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


def _parse_run(
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


def _centre(position: int, size: int, total: int) -> int:
    """The window of `size` centred on a position, kept inside the board (as read.lua does)."""
    start = position - (size - 1) // 2
    return max(0, min(start, total - size))


def _member_order(desc: bool) -> Callable[[str, int | float], tuple[Any, ...]]:
    key = order_key(desc)
    return lambda member, score: key((member, float(score)))
