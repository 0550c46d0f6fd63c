"""Tournament sign-ups, atomically with the participant cap (join.lua); a recurring
tournament's windows whose sign-ups and attempts the rollover has yet to remove."""

from __future__ import annotations

from leaderboard.domain.errors import BoardMissing, Conflict, TournamentRefused, Unavailable
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.rules import WriteRules
from leaderboard.stores.redis.scripts import Script


class TournamentCommands(IndexBase):
    _join = Script(__package__, "join")

    @guarded
    def join(self, board_id: str, player_id: str, now_ms: int) -> tuple[bool, int, str]:
        """Sign a player up for a tournament: (newly joined, participants now, the period id
        of the window joined). A recurring tournament's window is the one open at `now_ms`,
        else the next one, else the last (then refused: ended). One round trip once this
        process has the board's rules (a new or changed board costs one more). Refused
        (TournamentRefused) when it ended or is full; NotFound for an unknown board, Conflict
        for a board that is no tournament."""
        keys = BoardKeys(board_id)
        for _ in range(3):
            rules = self._rules.get(board_id) or self.write_rules(board_id)
            if rules is None:
                raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
            tour, window = rules.tournament_at(now_ms)
            window_key = window.id if window is not None and rules.recurring else None
            reply = self._join(
                keys=[keys.cfg, keys.joined(window_key), keys.tournament_windows],
                args=[player_id, now_ms, rules.text, tour],
            )
            if reply[0] == "OK":
                assert window is not None
                return reply[1] == 1, int(reply[2]), window.id
            if reply[0] == "STALE":
                self._remember_rules(board_id, WriteRules.parse(reply[1]))
                continue
            if reply[1] == "no_board":
                raise BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
            if reply[1] == "not_tournament":
                raise Conflict(f"board {board_id!r} is not a tournament", board_id=board_id)
            raise TournamentRefused(reply[2])
        raise Unavailable("the board's rules kept changing; retry", retry_after=1, store="redis")

    @guarded
    def tournament_counts(
        self, windows: list[tuple[str, str | None]]
    ) -> list[tuple[int, int | None]]:
        """(participants, accepted submissions) of each (board, window id: None for a one-shot
        tournament) as `joined` and `attempts` hold them now, in one pipeline (one round trip a
        node); submissions are None where nobody was counted (a tournament without
        max_attempts counts none)."""
        pipe = self.client.pipeline(transaction=False)
        for board_id, window_id in windows:
            keys = BoardKeys(board_id)
            pipe.scard(keys.joined(window_id))
            pipe.hget(keys.attempts(window_id), "~")
        replies = pipe.execute() if windows else []
        return [
            (int(replies[i]), None if replies[i + 1] is None else int(replies[i + 1]))
            for i in range(0, len(replies), 2)
        ]

    @guarded
    def tournament_windows(self, board_id: str) -> set[str]:
        """The windows of a recurring tournament whose sign-ups or attempts are still held."""
        members = self.client.smembers(BoardKeys(board_id).tournament_windows)
        return {m.decode() if isinstance(m, bytes) else m for m in members}

    @guarded
    def drop_tournament_window(self, board_id: str, window_id: str) -> None:
        """Remove a window's sign-ups and attempts (it is over, and archived if played)."""
        keys = BoardKeys(board_id)
        pipe = self.client.pipeline(transaction=False)  # one slot: the board's hash tag
        pipe.delete(keys.joined(window_id), keys.attempts(window_id))
        pipe.srem(keys.tournament_windows, window_id)
        pipe.execute()
