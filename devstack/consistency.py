"""One check, used wherever a test needs it: the serving index equals the system of record."""

from __future__ import annotations

import json
from typing import Any

import psycopg

from leaderboard.domain.boards import BoardConfig


def assert_redis_equals_postgres(client: Any, database_url: str, board_id: str) -> int:
    """Every sorted set of the board (with its shadow: hidden players' entries) holds exactly
    the present standings of PostgreSQL, in the board's order (ties included), metadata matches
    for every player on the board, and a team board's members sets hold exactly the recorded
    contributions. Returns how many sorted sets were compared."""
    from leaderboard.domain.shards import order_key, shard_board_ids

    prefix = f"lb:{{{board_id}}}:"
    raw = client.get(prefix + "cfg")
    shards = int(json.loads(raw).get("shards", 1)) if raw else 1
    # a sharded board's entries are in its shards' keys
    spaces = (
        [prefix] if shards <= 1 else [f"lb:{{{tag}}}:" for tag in shard_board_ids(board_id, shards)]
    )
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT config, version FROM boards WHERE board_id = %s", (board_id,)
        ).fetchone()
        board = BoardConfig.from_public({**row[0], "version": row[1]}) if row else None
        sort = board.sort if board else json.loads(client.get(prefix + "cfg"))["sort"]
        ties = board.ties if board else json.loads(client.get(prefix + "cfg"))["ties"]
        order = "score DESC" if sort == "desc" else "score ASC"
        spec = json.loads(raw or "{}").get("tb")
        columns = len(board.tiebreakers) if board else (spec.count(",") + 1 if spec else 0)
        if columns:  # tie-breaker boards: the tie key's byte order is the board's order
            order += ", tie_key DESC" if sort == "desc" else ", tie_key ASC"
        order += (
            ", COALESCE(reached_arrival, reached_version)"
            if ties == "first"
            else (", player_id DESC" if sort == "desc" else ", player_id")
        )
        keys = {
            (p, r)
            for p, r in conn.execute(
                "SELECT DISTINCT period, region FROM standings WHERE board_id = %s AND present",
                (board_id,),
            ).fetchall()
        }
        in_index = {
            tuple([*s.split(":", 1), ""][:2])
            for space in spaces
            for s in client.smembers(space + "keys")
            if client.zcard(space + "z:" + s) or client.zcard(space + "zh:" + s)
        }
        assert in_index == keys, (board_id, in_index ^ keys)
        for period, region in keys:
            suffix = f"{period}:{region}" if region else period
            query = (  # `order` is built from fixed strings only
                "SELECT player_id, score" + (", tie_key" if columns else "") + " FROM standings"
                " WHERE board_id = %s AND period = %s AND region = %s AND present ORDER BY " + order
            )
            in_postgres = conn.execute(query, (board_id, period, region)).fetchall()
            rows = sorted(
                (
                    row
                    for space in spaces
                    for kind in ("z:", "zh:")
                    for row in client.zrange(space + kind + suffix, 0, -1, withscores=True)
                ),
                key=order_key(sort == "desc"),
            )
            width = 16 * (1 + columns)  # a tie-breaker member: score key, tie key, ...
            in_redis = [
                (m.split("|", 1)[1] if ties == "first" or columns else m, s)
                + ((m[16:width],) if columns else ())
                for m, s in rows
            ]
            assert in_redis == in_postgres, (board_id, suffix)
        if board is not None and board.teams:
            _assert_teams_equal(client, conn, board_id, prefix)
        metadata: dict[str, Any] = dict(
            conn.execute(
                "SELECT m.player_id, m.metadata FROM player_metadata m WHERE m.board_id = %s"
                " AND m.metadata IS NOT NULL AND EXISTS (SELECT 1 FROM standings s WHERE"
                " s.board_id = m.board_id AND s.player_id = m.player_id AND s.present)",
                (board_id,),
            ).fetchall()
        )
    in_redis_meta = {
        p: json.loads(m) for space in spaces for p, m in client.hgetall(space + "meta").items()
    }
    assert in_redis_meta == metadata
    return len(keys)


def _assert_teams_equal(client: Any, conn: Any, board_id: str, prefix: str) -> None:
    """A team board: every team's members (hidden ones in the shadow sets) hold exactly the
    contributions PostgreSQL recorded."""
    recorded: dict[tuple[str, str, str], dict[str, float]] = {}
    for period, region, team, player, contribution in conn.execute(
        "SELECT period, region, team_id, player_id, contribution FROM team_members"
        " WHERE board_id = %s",
        (board_id,),
    ).fetchall():
        recorded.setdefault((period, region, team), {})[player] = float(contribution)
    for (period, region, team), players in recorded.items():
        suffix = f"{period}:{region}" if region else period
        held = {
            member: float(score)
            for kind in ("tm:", "tmh:")
            for member, score in client.zrange(
                f"{prefix}{kind}{suffix}:{team}", 0, -1, withscores=True
            )
        }
        assert held == players, (board_id, suffix, team)
