"""Loading a board's serving data from the record (a rebuild): entries, players, hidden players,
the version counter; a pipeline a call."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.shards import shard_board_id, shard_of, stamp_prefix
from leaderboard.domain.tiebreakers import member as tiebreaker_member
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import BoardKeys, key_spaces, player_key_space

Row = tuple[str, float, int, str | None]  # player, score, reached version, tie key


class LoadingCommands(IndexBase):
    @guarded
    def load_entries(
        self,
        board: BoardConfig,
        period_id: str,
        region: str | None,
        rows: Sequence[Row],
        *,
        hidden: bool = False,
    ) -> None:
        """Add (player, score, reached version, tie key) rows to one sorted set, in one round
        trip (to each shard's set of a sharded board, one pipeline); `hidden`: rows of hidden
        players, to the set's shadow."""
        zset = BoardKeys.shadow if hidden else BoardKeys.zset
        desc = board.sort == "desc"
        stamp: Callable[[int], str]
        parts: dict[str, Sequence[Row]]
        if board.shards > 1:
            # ties=first: the record's reached value is the arrival that ordered the ties
            def stamp(reached: int) -> str:
                return stamp_prefix(reached, desc)

            by_shard: dict[str, list[Row]] = {}
            for row in rows:
                shard = shard_of(row[0], board.shards)
                name = shard_board_id(board.board_id, shard, board.shards)
                by_shard.setdefault(name, []).append(row)
            parts = dict(by_shard)
        else:

            def stamp(reached: int) -> str:
                return f"{(999_999_999_999_999 - reached) if desc else reached:015d}|"

            parts = {board.board_id: rows}
        pipe = self.client.pipeline(transaction=False)
        for name, part in parts.items():
            keys = BoardKeys(name)
            _queue_entries(
                pipe,
                zset(keys, period_id, region),
                keys.members(period_id, region),
                board,
                part,
                stamp if board.ties == "first" else None,
            )
            pipe.sadd(keys.registry, keys.suffix(period_id, region))
            pipe.delete(keys.range)  # recomputed from the sets by the next increment
        pipe.execute()

    @guarded
    def load_players(
        self, board_id: str, refs: dict[str, int], metadata: dict[str, str], shards: int = 1
    ) -> None:
        pipe = self.client.pipeline(transaction=False)
        for player, count in refs.items():
            keys = BoardKeys(player_key_space(board_id, player, shards))
            pipe.hset(keys.refs, player, count)
            if player in metadata:
                pipe.hset(keys.meta, player, metadata[player])
        pipe.execute()

    @guarded
    def load_hidden(self, board_id: str, hidden: dict[str, int], shards: int = 1) -> None:
        """The board's hidden players (player -> when hidden, ms), each on its own shard; their
        entries were loaded to the sets' shadows (load_entries(hidden=True))."""
        by_name: dict[str, dict[str, int]] = {}
        for player, at in hidden.items():
            by_name.setdefault(player_key_space(board_id, player, shards), {})[player] = at
        pipe = self.client.pipeline(transaction=False)
        for name, players in by_name.items():
            pipe.hset(BoardKeys(name).hidden, mapping=players)
        pipe.execute()

    @guarded
    def set_sequence(self, board_id: str, value: int, shards: int = 1) -> None:
        """Restart the version counter (every shard's, of a sharded board) at `value`."""
        for name in key_spaces(board_id, shards):
            self.client.set(BoardKeys(name).seq, value)


def _queue_entries(
    pipe: Any,
    zkey: str,
    mkey: str,
    board: BoardConfig,
    rows: Sequence[Row],
    stamp: Callable[[int], str] | None,
) -> None:
    """The members the submit script would have written: on ties=first boards (`stamp`) the
    arrival's prefix, on tie-breaker boards the score and tie keys; the player id elsewhere."""
    if board.tiebreakers:
        members = {
            player: tiebreaker_member(
                score, tie_key or "", stamp(reached)[:-1] if stamp is not None else "", player
            )
            for player, score, reached, tie_key in rows
        }
    elif stamp is not None:
        members = {player: stamp(reached) + player for player, _, reached, _ in rows}
    else:
        pipe.zadd(zkey, {player: score for player, score, _, _ in rows})
        return
    pipe.zadd(zkey, {members[p]: score for p, score, _, _ in rows})
    pipe.hset(mkey, mapping=members)
