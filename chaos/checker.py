"""The independent checker: what the chaos run proves, worked out from the outside.

It shares no code with the service (tests/chaos/test_chaos_checker.py holds it to that: it imports
neither `leaderboard` nor `devstack`). It reads PostgreSQL with raw SQL and Redis with raw
commands on the keys docs/architecture.md documents, and keeps its own model of the
submissions, from the rules in docs/API.md:

- modes: `increment` adds, `best` keeps the better (higher for desc, lower for asc), `set`
  replaces; every period the board keeps and the submission's region board apply the same;
- ties: `shared` is competition ranking (1 + the number of strictly better scores), `first`
  orders equal scores by the version that reached them;
- periods: `all-time`, and the current `YYYY-MM-DD`, `YYYY-Www` (ISO week) and `YYYY-MM` of
  the moment the event occurred, in UTC;
- sharded boards (`shards: K`): each shard s = 0..K-1 is laid out like a board under the
  first of the tags `board.s`, `board.s.1`, `board.s.2`, ... whose cluster slot (CRC16 of the
  tag mod 16384) lies within the middle quarter of the s-th of K equal slot ranges
  ([s + 3/8, s + 5/8) x 16384 / K, floored and ceiled); the board is the union of its shards,
  ordered as one sorted set
  would be (score, then member); `ties: first` orders equal scores by the event's `arrival`
  (a shard's versions are its own), and a write's response has no rank.

Every submission of the run carries a unique nonce in its metadata (`n`), so each event of the
log can be tied to the submission it came from, acknowledged or not.
"""

from __future__ import annotations

import binascii
import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
import redis
from psycopg import sql

# What a client may be answered without it being a bug: 503 (retry), 429 (retry).
RETRYABLE = {429, 503}


@dataclass(frozen=True)
class Board:
    """A board's rules as the run created it (the client's own copy, not read from the service)."""

    board_id: str
    mode: str
    sort: str
    ties: str
    periods: tuple[str, ...]
    regions: tuple[str, ...] = ()
    shards: int = 1

    @property
    def tags(self) -> list[str]:
        """The hash tags its serving keys live under: the board's, or each shard's."""
        if self.shards <= 1:
            return [self.board_id]
        return [_shard_tag(self.board_id, s, self.shards) for s in range(self.shards)]


def _shard_tag(board_id: str, shard: int, shards: int) -> str:
    """The documented tag of a shard, worked out here from the rule in docs/architecture.md."""
    low = math.floor((shard + 3 / 8) * 16384 / shards)
    high = math.ceil((shard + 5 / 8) * 16384 / shards)
    tag, salt = f"{board_id}.{shard}", 0
    while not low <= binascii.crc_hqx(tag.encode(), 0) % 16384 < high:
        salt += 1
        tag = f"{board_id}.{shard}.{salt}"
    return tag


@dataclass
class Submission:
    """One logical submission (one Idempotency-Key) and what the client saw of it."""

    key: str
    board_id: str
    player_id: str
    score: int | float
    region: str | None
    seq: int  # the client's own order for this player (one client owns a player)
    expect_reject: bool = False
    acked: bool = False
    rejected_status: int | None = None
    event_id: str | None = None
    version: int | None = None
    standings: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Verdict:
    """The checker's findings; `ok` only when every list is empty and every count is zero."""

    submissions: int = 0
    acknowledged: int = 0
    unacknowledged: int = 0
    unacknowledged_applied: int = 0
    events_in_log: int = 0
    lost: int = 0
    duplicated: int = 0
    unknown_events: int = 0
    wrong_event_payload: int = 0
    client_order_violations: int = 0
    response_mismatches: int = 0
    boards_checked: int = 0
    sets_checked: int = 0
    entries_checked: int = 0
    redis_vs_postgres: list[str] = field(default_factory=list)
    redis_vs_model: list[str] = field(default_factory=list)
    postgres_vs_model: list[str] = field(default_factory=list)
    metadata_mismatches: list[str] = field(default_factory=list)
    bad_statuses: dict[str, int] = field(default_factory=dict)
    unexpected_rejections: int = 0
    accepted_but_expected_reject: int = 0
    examples: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (
            self.lost
            or self.duplicated
            or self.unknown_events
            or self.wrong_event_payload
            or self.client_order_violations
            or self.response_mismatches
            or self.redis_vs_postgres
            or self.redis_vs_model
            or self.postgres_vs_model
            or self.metadata_mismatches
            or self.bad_statuses
            or self.unexpected_rejections
            or self.accepted_but_expected_reject
        )

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        for name in ("redis_vs_postgres", "redis_vs_model", "postgres_vs_model"):
            out[name] = out[name][:20]
        out["metadata_mismatches"] = out["metadata_mismatches"][:20]
        out["examples"] = out["examples"][:20]
        out["ok"] = self.ok
        return out


def period_ids(kinds: tuple[str, ...], at: datetime) -> list[str]:
    """The period ids an event at `at` counts towards (docs/API.md, "Periods")."""
    at = at.astimezone(UTC)
    ids = []
    for kind in kinds:
        if kind == "all-time":
            ids.append("all-time")
        elif kind == "daily":
            ids.append(at.strftime("%Y-%m-%d"))
        elif kind == "weekly":
            year, week, _ = at.isocalendar()
            ids.append(f"{year}-W{week:02d}")
        elif kind == "monthly":
            ids.append(at.strftime("%Y-%m"))
        else:
            raise ValueError(f"unknown period kind {kind!r}")
    return ids


class Standings:
    """The model of one board/period/region: player -> (score, version that reached it)."""

    def __init__(self, sort: str, ties: str) -> None:
        self.sort = sort
        self.ties = ties
        self.entries: dict[str, tuple[float, int]] = {}

    def better(self, a: float, b: float) -> bool:
        return a > b if self.sort == "desc" else a < b

    def apply(self, mode: str, player: str, score: float, version: int) -> None:
        old = self.entries.get(player)
        if old is None:
            new = score
        elif mode == "increment":
            new = old[0] + score
        elif mode == "best":
            new = score if self.better(score, old[0]) else old[0]
        elif mode == "set":
            new = score
        else:
            raise ValueError(f"unknown mode {mode!r}")
        if old is None or new != old[0]:
            self.entries[player] = (new, version)

    def rank(self, player: str) -> int:
        score, reached = self.entries[player]
        if self.ties == "shared":
            return 1 + sum(1 for s, _ in self.entries.values() if self.better(s, score))
        return 1 + sum(
            1
            for p, (s, r) in self.entries.items()
            if p != player and (self.better(s, score) or (s == score and r < reached))
        )

    def order(self) -> list[str]:
        """Board order: by score, then (ties first) by the version that reached it."""
        sign = -1 if self.sort == "desc" else 1
        if self.ties == "first":
            return sorted(
                self.entries, key=lambda p: (sign * self.entries[p][0], self.entries[p][1])
            )
        return sorted(self.entries, key=lambda p: (sign * self.entries[p][0], p))

    def scores(self) -> dict[str, float]:
        return {p: s for p, (s, _) in self.entries.items()}


@dataclass
class LoggedEvent:
    event_id: str
    board_id: str
    player_id: str
    version: int
    occurred_at: datetime
    payload: dict[str, Any]

    @property
    def nonce(self) -> str | None:
        meta = self.payload.get("metadata") or {}
        value = meta.get("n") if isinstance(meta, dict) else None
        return value if isinstance(value, str) else None


def read_events(conn: psycopg.Connection[Any], board_ids: list[str]) -> list[LoggedEvent]:
    rows = conn.execute(
        "SELECT event_id::text, board_id, player_id, version, occurred_at, payload::text"
        " FROM score_events WHERE board_id = ANY(%s)",
        (board_ids,),
    ).fetchall()
    return [LoggedEvent(r[0], r[1], r[2], int(r[3]), r[4], json.loads(r[5])) for r in rows]


def _suffix(period: str, region: str | None) -> str:
    return f"{period}:{region}" if region else period


def redis_standings(
    client: redis.Redis, board: Board, period: str, region: str | None
) -> list[tuple[str, float]]:
    """A sorted set in board order as (player, score), from the documented keys (a sharded
    board's shards merged as one sorted set orders: by score, then by member)."""
    rows: list[tuple[float, str, str]] = []  # (score, member, player)
    for tag in board.tags:
        prefix = f"lb:{{{tag}}}:"
        found: Any = client.zrange(prefix + "z:" + _suffix(period, region), 0, -1, withscores=True)
        by_member: dict[str, str] = {}
        if board.ties == "first":
            pairs: Any = client.hgetall(prefix + "m:" + _suffix(period, region))
            by_member = {v.decode(): k.decode() for k, v in pairs.items()}
        for m, s in found:
            member = m.decode()
            player = by_member.get(member, "?" + member) if board.ties == "first" else member
            rows.append((float(s), member, player))
    rows.sort(reverse=board.sort == "desc")  # ZREVRANGE order on desc boards
    return [(player, score) for score, _, player in rows]


def redis_suffixes(client: redis.Redis, board: Board) -> set[str]:
    found = set()
    for tag in board.tags:
        prefix = f"lb:{{{tag}}}:z:"
        found |= {k.decode()[len(prefix) :] for k in client.scan_iter(match=prefix + "*")}
    return found


def postgres_standings(
    conn: psycopg.Connection[Any], board: Board
) -> dict[tuple[str, str], list[tuple[str, float, int]]]:
    """Present standings per (period, region ('' = global)), in board order."""
    # A sharded board's ties are ordered by arrival (its shards' versions are not comparable).
    reached = "reached_arrival, " if board.shards > 1 else ""
    query = sql.SQL(
        "SELECT period, region, player_id, score, coalesce({reached}reached_version, version)"
        " FROM standings WHERE board_id = %s AND present"
        " ORDER BY period, region, score {direction}, {tie}player_id"
    ).format(
        reached=sql.SQL(reached),
        direction=sql.SQL("DESC" if board.sort == "desc" else "ASC"),
        tie=sql.SQL(f"coalesce({reached}reached_version) ASC, " if board.ties == "first" else ""),
    )
    out: dict[tuple[str, str], list[tuple[str, float, int]]] = defaultdict(list)
    for period, region, player, score, reached in conn.execute(query, (board.board_id,)):
        out[(period, region)].append((player, float(score), int(reached)))
    return out


def _ranks(board: Board, ordered: list[tuple[str, float]]) -> dict[str, int]:
    """Ranks from a list in board order (competition ranks for shared, positions for first)."""
    ranks: dict[str, int] = {}
    for position, (player, score) in enumerate(ordered):
        if board.ties == "first" or position == 0 or ordered[position - 1][1] != score:
            ranks[player] = position + 1
        else:
            ranks[player] = ranks[ordered[position - 1][0]]
    return ranks


def _sorted_ok(board: Board, ordered: list[tuple[str, float]]) -> bool:
    scores = [s for _, s in ordered]
    return scores == sorted(scores, reverse=board.sort == "desc")


def check(
    boards: list[Board],
    submissions: list[Submission],
    statuses: dict[int, int],
    database_url: str,
    redis_url: str,
    *,
    cluster: bool = False,
) -> Verdict:
    """Compare the log, PostgreSQL's standings, Redis and the model; see the module docstring."""
    verdict = Verdict(submissions=len(submissions))
    verdict.bad_statuses = {str(s): n for s, n in statuses.items() if s >= 500 and s != 503}
    by_key = {s.key: s for s in submissions}
    boards_by_id = {b.board_id: b for b in boards}
    for s in submissions:
        if s.expect_reject:
            if s.acked:
                verdict.accepted_but_expected_reject += 1
        elif s.rejected_status is not None:
            verdict.unexpected_rejections += 1
            verdict.examples.append(f"{s.key}: unexpected {s.rejected_status}")
    with psycopg.connect(database_url, autocommit=True) as conn:
        events = read_events(conn, list(boards_by_id))
        pg = {b.board_id: postgres_standings(conn, b) for b in boards}
        pg_meta = {
            (b, p): m
            for b, p, m in conn.execute(
                "SELECT board_id, player_id, metadata::text FROM player_metadata"
                " WHERE board_id = ANY(%s)",
                (list(boards_by_id),),
            )
        }
    verdict.events_in_log = len(events)
    found: dict[str, list[LoggedEvent]] = defaultdict(list)
    for event in events:
        sub = by_key.get(event.nonce or "")
        if sub is None or sub.board_id != event.board_id:
            verdict.unknown_events += 1
            verdict.examples.append(f"event {event.event_id} belongs to no submission of the run")
            continue
        found[sub.key].append(event)
        if (
            event.player_id != sub.player_id
            or event.payload.get("submitted_score") != sub.score
            or (event.payload.get("region") or None) != sub.region
        ):
            verdict.wrong_event_payload += 1
            verdict.examples.append(f"event {event.event_id} does not carry what {sub.key} sent")
    applied: list[tuple[Submission, LoggedEvent]] = []
    for sub in submissions:
        got = found.get(sub.key, [])
        if sub.acked:
            verdict.acknowledged += 1
            if not any(e.event_id == sub.event_id for e in got):
                verdict.lost += 1
                verdict.examples.append(
                    f"acknowledged {sub.key} ({sub.event_id}) is not in the log"
                )
        else:
            verdict.unacknowledged += 1
            verdict.unacknowledged_applied += bool(got)
        if len(got) > 1:
            verdict.duplicated += 1
            verdict.examples.append(
                f"{sub.key} applied {len(got)} times: {[e.event_id for e in got]}"
            )
        if got:
            applied.append((sub, min(got, key=lambda e: e.version)))
    _check_client_order(applied, verdict)
    models = _replay(boards_by_id, applied, verdict)
    connect = redis.RedisCluster.from_url if cluster else redis.Redis.from_url
    with connect(redis_url, socket_timeout=10) as client:
        for board in boards:
            _compare_board(board, models[board.board_id], pg[board.board_id], client, verdict)
            _compare_metadata(board, applied, pg_meta, client, verdict)
    return verdict


def _check_client_order(applied: list[tuple[Submission, LoggedEvent]], verdict: Verdict) -> None:
    """One client submits a player's scores one after another, so the service's versions for
    that player must grow in the client's order."""
    per_player: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for sub, event in applied:
        per_player[(sub.board_id, sub.player_id)].append((sub.seq, event.version))
    for key, pairs in per_player.items():
        versions = [v for _, v in sorted(pairs)]
        if versions != sorted(versions):
            verdict.client_order_violations += 1
            verdict.examples.append(f"{key}: versions out of the client's order")


def _replay(
    boards: dict[str, Board], applied: list[tuple[Submission, LoggedEvent]], verdict: Verdict
) -> dict[str, dict[tuple[str, str], Standings]]:
    """Apply every applied submission in version order; check each acknowledged response's
    standings (score, and rank) against the model at that moment."""
    models: dict[str, dict[tuple[str, str], Standings]] = {b: {} for b in boards}
    for sub, event in sorted(applied, key=lambda pair: (pair[0].board_id, pair[1].version)):
        board = boards[sub.board_id]
        model = models[board.board_id]
        # What orders equal scores: the per-board version, or a sharded board's arrival.
        reached = event.version
        if board.shards > 1 and board.ties == "first":
            reached = int(event.payload.get("arrival") or 0)
        touched = []
        regions = ["", sub.region] if sub.region else [""]
        for period in period_ids(board.periods, event.occurred_at):
            for region in regions:
                standings = model.setdefault((period, region), Standings(board.sort, board.ties))
                standings.apply(board.mode, sub.player_id, float(sub.score), reached)
                touched.append((period, region, standings))
        if not sub.acked:
            continue
        if sub.version is not None and sub.version != event.version:
            verdict.response_mismatches += 1
            verdict.examples.append(f"{sub.key}: response version {sub.version} != log")
        expected = {  # a sharded board's write answers no rank (it would take every shard)
            (period, region or None): (
                st.entries[sub.player_id][0],
                None if board.shards > 1 else st.rank(sub.player_id),
            )
            for period, region, st in touched
        }
        answered = {
            (line.get("period"), line.get("region")): (float(line["score"]), line.get("rank"))
            for line in sub.standings
        }
        if expected != answered:
            verdict.response_mismatches += 1
            verdict.examples.append(f"{sub.key}: answered {answered}, model {expected}")
    return models


def _compare_board(
    board: Board,
    model: dict[tuple[str, str], Standings],
    pg: dict[tuple[str, str], list[tuple[str, float, int]]],
    client: redis.Redis,
    verdict: Verdict,
) -> None:
    verdict.boards_checked += 1
    names = set(model) | set(pg)
    in_redis = redis_suffixes(client, board)
    expected_suffixes = {_suffix(p, r or None) for p, r in names}
    for extra in sorted(in_redis - expected_suffixes):
        verdict.redis_vs_model.append(f"{board.board_id}: Redis has {extra!r}, the model does not")
    for period, region in sorted(names):
        where = f"{board.board_id} {period} {region or '-'}"
        verdict.sets_checked += 1
        r_list = redis_standings(client, board, period, region or None)
        p_rows = pg.get((period, region), [])
        p_list = [(p, s) for p, s, _ in p_rows]
        m = model.get((period, region)) or Standings(board.sort, board.ties)
        m_list = [(p, m.entries[p][0]) for p in m.order()]
        verdict.entries_checked += len(m_list)
        if not _sorted_ok(board, r_list):
            verdict.redis_vs_model.append(f"{where}: Redis is not in score order")
        if dict(r_list) != dict(p_list) or len(r_list) != len(p_list):
            verdict.redis_vs_postgres.append(f"{where}: scores differ: {_diff(r_list, p_list)}")
        if dict(r_list) != dict(m_list) or len(r_list) != len(m_list):
            verdict.redis_vs_model.append(f"{where}: scores differ: {_diff(r_list, m_list)}")
        if dict(p_list) != dict(m_list):
            verdict.postgres_vs_model.append(f"{where}: scores differ: {_diff(p_list, m_list)}")
        if board.ties == "first":
            order_r, order_p, order_m = ([p for p, _ in x] for x in (r_list, p_list, m_list))
            if order_r != order_p:
                verdict.redis_vs_postgres.append(f"{where}: tie order differs")
            if order_r != order_m:
                verdict.redis_vs_model.append(f"{where}: tie order differs")
        elif _ranks(board, r_list) != _ranks(board, m_list):
            verdict.redis_vs_model.append(f"{where}: ranks differ")


def _diff(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> str:
    da, db = dict(a), dict(b)
    keys = sorted(k for k in set(da) | set(db) if da.get(k) != db.get(k))
    return ", ".join(f"{k}: {da.get(k)} vs {db.get(k)}" for k in keys[:5]) or "duplicates"


def _compare_metadata(
    board: Board,
    applied: list[tuple[Submission, LoggedEvent]],
    pg_meta: dict[tuple[str, str], str],
    client: redis.Redis,
    verdict: Verdict,
) -> None:
    """Metadata is replaced by every submission that carries it: the last one by version."""
    last: dict[str, tuple[int, dict[str, Any]]] = {}
    for sub, event in applied:
        if sub.board_id == board.board_id:
            meta = event.payload.get("metadata")
            if isinstance(meta, dict) and event.version > last.get(sub.player_id, (-1, {}))[0]:
                last[sub.player_id] = (event.version, meta)
    in_redis: dict[str, Any] = {}
    for tag in board.tags:
        stored_meta: Any = client.hgetall(f"lb:{{{tag}}}:meta")
        in_redis |= {k.decode(): json.loads(v) for k, v in stored_meta.items()}
    for player, (_, meta) in last.items():
        stored = pg_meta.get((board.board_id, player))
        if in_redis.get(player) != meta:
            verdict.metadata_mismatches.append(
                f"{board.board_id} {player}: Redis {in_redis.get(player)} vs model {meta}"
            )
        if stored is None or json.loads(stored) != meta:
            verdict.metadata_mismatches.append(
                f"{board.board_id} {player}: PostgreSQL {stored} vs model {meta}"
            )
