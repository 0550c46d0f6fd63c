"""Migrations are versioned, idempotent, and upgrade a database of the previous version."""

from __future__ import annotations

import uuid
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from leaderboard.stores.postgres import database as postgres
from leaderboard.stores.postgres.database import apply_migrations, migration_files


@pytest.fixture
def empty_database(database_url):
    name = f"mig_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(database_url)
    yield urlunsplit(parts._replace(path=f"/{name}"))
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def _tables(url):
    with psycopg.connect(url) as conn:
        return {
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        }


def test_from_an_empty_database_and_again(empty_database):
    names = [name for name, _ in migration_files()]
    assert names == sorted(names) and names[0].startswith("0001_")
    assert apply_migrations(empty_database) == names
    assert {
        "boards",
        "score_events",
        "standings",
        "player_metadata",
        "player_tombstones",
        "schema_migrations",
    } <= _tables(empty_database)
    assert apply_migrations(empty_database) == []  # idempotent


def test_from_the_previous_version_keeps_the_data(empty_database):
    names = [name for name, _ in migration_files()]
    assert apply_migrations(empty_database, upto=names[-2]) == names[:-1]
    with psycopg.connect(empty_database) as conn:
        conn.execute(
            "INSERT INTO boards (board_id, config, version) VALUES (%s, %s, 3)",
            ("kept", '{"board_id": "kept"}'),
        )
    assert apply_migrations(empty_database) == names[-1:]
    with psycopg.connect(empty_database) as conn:
        kept = conn.execute("SELECT version FROM boards WHERE board_id = 'kept'").fetchone()
    assert kept == (3,)


def test_an_edited_migration_is_refused(empty_database, monkeypatch):
    apply_migrations(empty_database)
    edited = [(name, sql + "\n-- edited") for name, sql in migration_files()]
    monkeypatch.setattr(postgres, "migration_files", lambda: edited)
    with pytest.raises(RuntimeError, match="changed after it was applied"):
        apply_migrations(empty_database)


def test_event_log_and_standings_upgrade_in_place(empty_database):
    """0004 (payload as delivered, a version index) and 0005 (players in byte order) keep
    every row of a database that already holds scores."""
    names = [name for name, _ in migration_files()]
    before = next(name for name in names if name.startswith("0003_"))
    apply_migrations(empty_database, upto=before)
    payload = '{"schema": 1, "scores": [{"period": "all-time", "score": 5}]}'
    with psycopg.connect(empty_database) as conn:
        conn.execute(
            "INSERT INTO score_events (event_id, board_id, player_id, version, occurred_at,"
            " payload) VALUES (%s, 'b', 'B', 7, now(), %s)",
            (str(uuid.uuid4()), payload),
        )
        for player, score in (("a", 5), ("B", 5), ("_", 5)):
            conn.execute(
                "INSERT INTO standings (board_id, period, player_id, score, version, present)"
                " VALUES ('b', 'all-time', %s, %s, 7, true)",
                (player, score),
            )
    upto = next(name for name in names if name.startswith("0005_"))
    assert [n[:4] for n in apply_migrations(empty_database, upto=upto)] == ["0004", "0005"]
    with psycopg.connect(empty_database) as conn:
        stored = conn.execute("SELECT payload::jsonb = %s::jsonb FROM score_events", (payload,))
        assert stored.fetchone() == (True,)
        kinds = conn.execute(
            "SELECT data_type, collation_name FROM information_schema.columns"
            " WHERE table_name = %s AND column_name = %s",
            ("score_events", "payload"),
        ).fetchone()
        assert kinds == ("json", None)
        collation = conn.execute(
            "SELECT collation_name FROM information_schema.columns"
            " WHERE table_name = 'standings' AND column_name = 'player_id'"
        ).fetchone()
        assert collation == ("C",)
        # Redis's order for equal scores: bytes, so 'B' (0x42) < '_' (0x5f) < 'a' (0x61)
        players = conn.execute("SELECT player_id FROM standings ORDER BY player_id").fetchall()
        assert [p for (p,) in players] == ["B", "_", "a"]
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'score_events'"
        ).fetchall()
        assert {i for (i,) in indexes} == {"score_events_pkey", "score_events_board_version"}


def test_the_archive_gains_kinds_and_totals_in_place(empty_database):
    """0006 (player history) fills the kind of every archived entry and the size of every
    finished archived board, replaces the player index, and leaves unfinished periods alone."""
    names = [name for name, _ in migration_files()]
    apply_migrations(empty_database, upto=next(n for n in names if n.startswith("0005_")))
    with psycopg.connect(empty_database) as conn:
        for period, kind, status in (
            ("2026-W01", "weekly", "archived"),
            ("2026-01", "monthly", "archived"),
            ("2026-01-05", "daily", "archiving"),
        ):
            conn.execute(
                "INSERT INTO archived_periods (board_id, period, kind, starts_at, ends_at, status)"
                " VALUES ('b', %s, %s, now(), now(), %s)",
                (period, kind, status),
            )
            for position, (region, player) in enumerate((("", "ann"), ("", "bob"), ("EU", "ann"))):
                conn.execute(
                    "INSERT INTO archive_entries (board_id, period, region, position, rank,"
                    " player_id, score) VALUES ('b', %s, %s, %s, %s, %s, 1)",
                    (period, region, position, position + 1, player),
                )
    applied = apply_migrations(empty_database, upto=next(n for n in names if n.startswith("0006_")))
    assert [n[:4] for n in applied] == ["0006"]
    with psycopg.connect(empty_database) as conn:
        kinds = conn.execute(
            "SELECT DISTINCT period, kind FROM archive_entries ORDER BY period"
        ).fetchall()
        assert kinds == [("2026-01", "monthly"), ("2026-01-05", "daily"), ("2026-W01", "weekly")]
        totals = conn.execute(
            "SELECT period, region, entries FROM archived_totals ORDER BY period, region"
        ).fetchall()
        assert totals == [
            ("2026-01", "", 2),
            ("2026-01", "EU", 1),
            ("2026-W01", "", 2),
            ("2026-W01", "EU", 1),
        ]
        indexes = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = 'archive_entries'"
        ).fetchall()
        assert {i for (i,) in indexes} == {"archive_entries_pkey", "archive_entries_history"}


def test_the_record_keeps_the_arrival_that_orders_a_sharded_boards_ties(empty_database):
    """0007 (issue 22): standings gain reached_arrival, NULL on every row already there."""
    names = [name for name, _ in migration_files()]
    apply_migrations(empty_database, upto=next(n for n in names if n.startswith("0006_")))
    with psycopg.connect(empty_database) as conn:
        conn.execute(
            "INSERT INTO standings (board_id, period, region, player_id, score, version,"
            " present) VALUES ('b', 'all-time', '', 'ann', 5, 3, true)"
        )
    upto = next(n for n in names if n.startswith("0007_"))
    assert [n[:4] for n in apply_migrations(empty_database, upto=upto)] == ["0007"]
    with psycopg.connect(empty_database) as conn:
        row = conn.execute("SELECT reached_arrival FROM standings").fetchone()
    assert row == (None,)


def test_the_record_keeps_hook_verdicts_and_finds_flags_by_index(empty_database):
    """0008 (issue 23): score_events gain hook_verdict and hook_reason (NULL on the events
    already there: their boards had no hook), only the recorded verdicts are allowed, and a
    board's flagged events are found through the partial index."""
    names = [name for name, _ in migration_files()]
    apply_migrations(empty_database, upto=next(n for n in names if n.startswith("0007_")))
    insert = (
        "INSERT INTO score_events (event_id, board_id, player_id, version, occurred_at,"
        " payload) VALUES (gen_random_uuid(), 'b', %s, 1, now(), '{}')"
    )
    with psycopg.connect(empty_database) as conn:
        conn.execute(insert, ("old",))
    upto = next(n for n in names if n.startswith("0008_"))
    assert [n[:4] for n in apply_migrations(empty_database, upto=upto)] == ["0008"]
    with psycopg.connect(empty_database, autocommit=True) as conn:
        row = conn.execute("SELECT hook_verdict, hook_reason FROM score_events").fetchone()
        assert row == (None, None)
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                "UPDATE score_events SET hook_verdict = 'reject'"  # never recorded: not applied
            )
        conn.execute("UPDATE score_events SET hook_verdict = 'flag', hook_reason = 'high'")
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(
            r[0]
            for r in conn.execute(
                "EXPLAIN SELECT event_id FROM score_events WHERE board_id = 'b'"
                " AND hook_verdict = 'flag' ORDER BY event_id DESC LIMIT 10"
            ).fetchall()
        )
    assert "score_events_review" in plan, plan


def test_the_record_keeps_the_tie_keys_of_tiebreaker_boards(empty_database):
    """0009 (issue 23): standings gain tie_key (byte order: collation "C") and archived
    entries their tie-breakers, NULL on every row already there."""
    names = [name for name, _ in migration_files()]
    before = [n for n in names if n < "0009"][-1]
    apply_migrations(empty_database, upto=before)
    with psycopg.connect(empty_database) as conn:
        conn.execute(
            "INSERT INTO standings (board_id, period, region, player_id, score, version,"
            " present) VALUES ('b', 'all-time', '', 'ann', 5, 3, true)"
        )
    upto = next(n for n in names if n.startswith("0009_"))
    assert [n[:4] for n in apply_migrations(empty_database, upto=upto)] == ["0009"]
    with psycopg.connect(empty_database) as conn:
        assert conn.execute("SELECT tie_key FROM standings").fetchone() == (None,)
        conn.execute(
            "INSERT INTO standings (board_id, period, region, player_id, score, version,"
            " present, tie_key) VALUES ('b', 'all-time', '', 'bob', 5, 4, true, 'a'),"
            " ('b', 'all-time', '', 'cy', 5, 5, true, 'B')"
        )
        ordered = conn.execute(
            "SELECT player_id FROM standings WHERE tie_key IS NOT NULL ORDER BY tie_key"
        ).fetchall()
        assert ordered == [("cy",), ("bob",)]  # bytes, whatever the database's locale
        column = conn.execute(
            "SELECT data_type FROM information_schema.columns"
            " WHERE table_name = 'archive_entries' AND column_name = 'tiebreakers'"
        ).fetchone()
    assert column == ("jsonb",)


def test_hidden_players_get_a_table_and_a_place_in_the_archive_of_their_own(empty_database):
    """0010 (issue 23): the record of hidden players (player ids in byte order, as Redis
    orders them), and hidden players' archived entries apart from the public archive."""
    names = [name for name, _ in migration_files()]
    apply_migrations(empty_database, upto=[n for n in names if n < "0010"][-1])
    assert {"hidden_players", "archive_hidden_entries"}.isdisjoint(_tables(empty_database))
    upto = next(n for n in names if n.startswith("0010_"))
    assert [n[:4] for n in apply_migrations(empty_database, upto=upto)] == ["0010"]
    with psycopg.connect(empty_database) as conn:
        conn.execute(
            "INSERT INTO hidden_players (board_id, player_id) VALUES ('b', 'a'), ('b', 'B')"
        )
        ordered = conn.execute("SELECT player_id FROM hidden_players ORDER BY player_id")
        assert ordered.fetchall() == [("B",), ("a",)]
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute("INSERT INTO hidden_players (board_id, player_id) VALUES ('b', 'a')")
    assert {"hidden_players", "archive_hidden_entries"} <= _tables(empty_database)
