"""Rebuilding a board's serving data from PostgreSQL, the system of record.

Used when a board's data vanished from Redis (flush, failover to an empty replica) and on an
admin's request. The board is hidden first (writes refused, reads served from the record),
the standings are streamed in chunks so memory stays bounded whatever the board's size, and
the rules are published last, so no write ever lands on a half-loaded board. The version
counter restarts above everything the record holds, by a wide margin, so an event from before
the loss can never look newer than one written after the rebuild.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from typing import Any

import psycopg

from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.clock import to_ms
from leaderboard.domain.errors import Conflict, NotFound, Unavailable
from leaderboard.stores.postgres.boards import BoardRepository
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.hidden_players import HiddenPlayers
from leaderboard.stores.postgres.record import StandingsStore
from leaderboard.stores.redis.serving_index import RedisIndex

log = logging.getLogger("leaderboard.rebuild")
VERSION_GAP = 1_000_000_000  # more events than could ever be in flight when data is lost
# How long a rebuild waits for the persister to store the board's acknowledged submissions
# (the queue's batching window is 5 s); API Gateway answers at 30 s.
RECORD_WAIT_SECONDS = 15.0


@dataclass
class RebuildReport:
    board_id: str
    entries: int = 0
    sorted_sets: int = 0
    players: int = 0
    version: int = 0
    seconds: float = 0.0

    def to_json(self) -> dict[str, object]:
        return asdict(self)


class Rebuilder:
    def __init__(self, db: Database, index: RedisIndex, *, chunk_size: int = 5000) -> None:
        self.db = db
        self.index = index
        self.boards = BoardRepository(db)
        self.chunk_size = chunk_size

    def lost_boards(self) -> list[str]:
        """Boards the record knows that the serving index does not serve."""
        return [b.board_id for b in self.boards.all() if self.is_lost(b)]

    def is_lost(self, board: BoardConfig) -> bool:
        """Whether the index lost the board's serving data: its own rules, or (sharded) the
        rules of any shard. On Redis Cluster the shards live on other nodes than the board's
        own keys, so one node coming back empty loses some shards and leaves the rest; the
        writes to those shards are refused until the whole board is rebuilt."""
        return not self.index.board_loaded(board.board_id, board.shards)

    def recover(
        self, *, queue_in_flight: int, now_ms: int, max_wait_ms: int = 600_000
    ) -> list[RebuildReport]:
        """Rebuild the lost boards, once their in-flight events can no longer be missing.

        Events acknowledged before the loss may still be in the queue; rebuilding before the
        persister stored them would leave them out of the serving index. So a lost board waits
        (writes get 503, reads come from the record) until the queue has drained, or for at
        most `max_wait_ms` if it never does.
        """
        reports = []
        for board_id in self.lost_boards():
            if self.index.rebuild_in_progress(board_id):
                continue  # being rebuilt right now (by an admin or a previous run)
            waited = now_ms - self.index.lost_since_ms(board_id, now_ms)
            if queue_in_flight == 0 or waited >= max_wait_ms:
                reports.append(self.rebuild(board_id))
            else:
                log.info(
                    "%s is lost; rebuild waits for %d in-flight events (%d s so far)",
                    board_id,
                    queue_in_flight,
                    waited // 1000,
                )
        return reports

    def rebuild(
        self, board_id: str, *, wait_for_record: float = RECORD_WAIT_SECONDS
    ) -> RebuildReport:
        """Load the board from the record, once the record holds every submission the board
        acknowledged (Unavailable, with nothing changed, if the persister does not catch up
        within `wait_for_record` seconds)."""
        started = time.perf_counter()
        board = self.boards.get(board_id)
        if board is None:
            raise NotFound(f"board {board_id!r} does not exist", board_id=board_id)
        report = RebuildReport(board_id)
        if not self.index.lock_rebuild(board_id):
            raise Conflict(f"a rebuild of board {board_id!r} is already in progress")
        try:
            self._wait_for_record(board, wait_for_record)
            self._rebuild(board, report)
        finally:
            self.index.unlock_rebuild(board_id)
        report.seconds = round(time.perf_counter() - started, 3)
        log.info(
            "rebuild of %s done: %d entries in %d sorted sets, %d players, %.1f s",
            board_id,
            report.entries,
            report.sorted_sets,
            report.players,
            report.seconds,
        )
        return report

    def _wait_for_record(self, board: BoardConfig, seconds: float) -> None:
        """Writes stop first; then the submissions still in the board's outbox (each stays
        there until the relay finds it in PostgreSQL) must reach the record, or a rebuild now
        would leave them out of the serving index for good. A board whose data was lost has
        no outbox left: the scheduled recovery waits for the queue instead (recover)."""
        self.index.stop_writes(board.board_id, board.shards)
        pending = set(self.index.outbox_event_ids(board.board_id, board.shards))
        if not pending:
            return
        record = StandingsStore(self.db)
        deadline = time.monotonic() + seconds
        while True:
            pending -= record.stored_event_ids(sorted(pending))
            if not pending:
                return
            if time.monotonic() >= deadline:
                self.index.publish_board(board)  # back in service, as it was
                raise Unavailable(
                    f"{len(pending)} of the board's acknowledged submissions are not in "
                    "PostgreSQL yet (the persister is behind); nothing was rebuilt: retry",
                    retry_after=5,
                    board_id=board.board_id,
                )
            log.info("rebuild of %s waits for %d events to be stored", board.board_id, len(pending))
            time.sleep(0.2)

    def _rebuild(self, board: BoardConfig, report: RebuildReport) -> None:
        board_id = board.board_id
        self.index.hide_board(board_id, board.shards)
        log.info("rebuild of %s started", board_id)
        with self.db.transaction() as conn:
            cursor = conn.cursor(name=f"rebuild_{board_id.replace('-', '_')}")
            cursor.itersize = self.chunk_size
            # hidden players' entries go to the sets' shadows (the hiding is in the record)
            cursor.execute(
                "SELECT s.period, s.region, h.player_id IS NOT NULL, s.player_id, s.score,"
                " COALESCE(s.reached_arrival, s.reached_version, s.version), s.tie_key"
                " FROM standings s LEFT JOIN hidden_players h"
                " ON h.board_id = s.board_id AND h.player_id = s.player_id"
                " WHERE s.board_id = %s AND s.present ORDER BY 1, 2, 3",
                (board_id,),
            )
            current: tuple[str, str, bool] | None = None
            chunk: list[tuple[str, float, int, str | None]] = []
            for period, region, hidden, player, score, reached, tie_key in cursor:
                if (period, region, hidden) != current or len(chunk) >= self.chunk_size:
                    if chunk and current is not None:
                        self._flush(board, current, chunk, report)
                    if current is None or (period, region) != current[:2]:
                        report.sorted_sets += 1
                    current, chunk = (period, region, hidden), []
                chunk.append((player, float(score), int(reached), tie_key))
            if chunk and current is not None:
                self._flush(board, current, chunk, report)
            cursor.close()
            self._load_players(conn, board, report)
            if board.teams is not None:
                self._load_teams(conn, board)
            hidden_at = HiddenPlayers(self.db).of_board(board_id)
            if hidden_at:
                self.index.load_hidden(
                    board_id, {p: to_ms(at) for p, at in hidden_at.items()}, board.shards
                )
            row = conn.execute(
                "SELECT GREATEST((SELECT max(version) FROM score_events WHERE board_id = %(b)s),"
                " (SELECT max(version) FROM standings WHERE board_id = %(b)s),"
                " (SELECT max(version) FROM player_tombstones WHERE board_id = %(b)s))",
                {"b": board_id},
            ).fetchone()
        report.version = int(row[0] or 0) + VERSION_GAP if row else VERSION_GAP
        self.index.set_sequence(board_id, report.version, board.shards)
        self.index.publish_board(board)  # last: from now on the board takes writes again

    def _flush(
        self,
        board: BoardConfig,
        key: tuple[str, str, bool],
        chunk: list[tuple[str, float, int, str | None]],
        report: RebuildReport,
    ) -> None:
        period, region, hidden = key
        self.index.load_entries(board, period, region or None, chunk, hidden=hidden)
        report.entries += len(chunk)
        log.info(
            "rebuild of %s: %d entries loaded (now in %s%s)",
            board.board_id,
            report.entries,
            period,
            f" {region}" if region else "",
        )

    def _load_teams(self, conn: psycopg.Connection[Any], board: BoardConfig) -> None:
        """Each team's members (hidden ones to the shadows) and the teams' scores: the sum of
        the visible members' contributions (in player id order; the index kept running sums,
        which may round fractional scores differently), or the best of them."""
        board_id = board.board_id
        cursor = conn.cursor(name=f"teams_{board_id.replace('-', '_')}")
        cursor.itersize = self.chunk_size
        cursor.execute(
            "SELECT m.period, m.region, m.team_id, m.player_id, m.contribution,"
            " h.player_id IS NOT NULL FROM team_members m LEFT JOIN hidden_players h"
            " ON h.board_id = m.board_id AND h.player_id = m.player_id"
            " WHERE m.board_id = %s ORDER BY 1, 2, 3, 4",
            (board_id,),
        )
        current: tuple[str, str] | None = None
        members: dict[str, list[tuple[str, float, bool]]] = {}  # a chunk of the set's members
        pending = 0
        scores: dict[str, float] = {}  # the set's teams, from their visible members so far
        pick = max if board.sort == "desc" else min

        def flush(last: bool) -> None:
            if current is not None and (members or last):
                self.index.load_teams(
                    board_id, current[0], current[1] or None, members, scores if last else {}
                )

        for period, region, team, player, contribution, hidden in cursor:
            if (period, region) != current:
                flush(last=True)
                current, members, pending, scores = (period, region), {}, 0, {}
            elif pending >= self.chunk_size:
                flush(last=False)
                members, pending = {}, 0
            value = float(contribution)
            members.setdefault(team, []).append((player, value, bool(hidden)))
            pending += 1
            if not hidden:
                before = scores.get(team)
                if before is None:
                    scores[team] = value
                else:
                    scores[team] = before + value if board.teams == "sum" else pick(before, value)
        flush(last=True)
        cursor.close()
        # which teams each player named (for deletes and hiding), a chunk at a time
        cursor = conn.cursor(name=f"named_{board_id.replace('-', '_')}")
        cursor.itersize = self.chunk_size
        cursor.execute(
            "SELECT player_id, array_agg(DISTINCT team_id) FROM team_members"
            " WHERE board_id = %s GROUP BY player_id",
            (board_id,),
        )
        named: dict[str, list[str]] = {}
        for player, teams in cursor:
            named[player] = list(teams)
            if len(named) >= self.chunk_size:
                self.index.load_player_teams(board_id, named)
                named = {}
        self.index.load_player_teams(board_id, named)
        cursor.close()

    def _load_players(
        self, conn: psycopg.Connection[Any], board: BoardConfig, report: RebuildReport
    ) -> None:
        board_id = board.board_id
        cursor = conn.cursor(name=f"players_{board_id.replace('-', '_')}")
        cursor.itersize = self.chunk_size
        cursor.execute(
            "SELECT s.player_id, count(*), m.metadata FROM standings s"
            " LEFT JOIN player_metadata m ON m.board_id = s.board_id"
            " AND m.player_id = s.player_id"
            " WHERE s.board_id = %s AND s.present GROUP BY s.player_id, m.metadata",
            (board_id,),
        )
        refs: dict[str, int] = {}
        metadata: dict[str, str] = {}
        for player, count, meta in cursor:
            refs[player] = int(count)
            if meta is not None:
                metadata[player] = json.dumps(meta, separators=(",", ":"))
            if len(refs) >= self.chunk_size:
                self.index.load_players(board_id, refs, metadata, board.shards)
                report.players += len(refs)
                refs, metadata = {}, {}
        if refs:
            self.index.load_players(board_id, refs, metadata, board.shards)
            report.players += len(refs)
        cursor.close()
