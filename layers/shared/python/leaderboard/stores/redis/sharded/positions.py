"""Where a read's entries are on a sharded board: the cut of a page over the shards' runs, a
player's shard and the members before it on every other shard, and the window around them."""

from __future__ import annotations

import json
from typing import Any

from leaderboard.domain.errors import ArchivedPeriod
from leaderboard.domain.periods import Period
from leaderboard.domain.read_results import Entry, Window
from leaderboard.domain.self_view import centre, self_window, shifted
from leaderboard.domain.shards import (
    Run,
    covers,
    merge_runs,
    run_bounds,
    shard_board_id,
    shard_of,
)
from leaderboard.domain.validation import format_score
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.rules import WriteRules
from leaderboard.stores.redis.sharded.rounds import (
    HiddenReader,
    Missing,
    Sets,
    ShardRounds,
    member_order,
    parse_run,
)


class ShardPositions(ShardRounds):
    def _own_window(
        self,
        board_id: str,
        rules: WriteRules,
        period: Period,
        region: str | None,
        reader: HiddenReader,
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
                raise ArchivedPeriod(
                    f"period {period.id} is archived", tiering=rules.tiering, period=period.id
                )
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
                start = centre(offset_or_rank - 1, size, total)
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
    ) -> tuple[str, list[tuple[str, float] | None], list[bool], HiddenReader | None]:
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
                    run, metas = parse_run(reply, at, True, rules.keyed)
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
            raise Missing("archived" if archived[0] else "no_player")
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
            before = member_order(rules.desc)(mine[0], mine[1]) < member_order(rules.desc)(
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
        start = centre(at, size, total)
        chosen = [p for p in placed if start <= p.position < start + size]
        return Window(
            total=total,
            start=start,
            player_position=at,
            entries=self._entries(chosen, metas, rules),
        )

    # --- many players, standings --------------------------------------------------------
