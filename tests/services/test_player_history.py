"""A player's past results (issue 13, acceptance 3): after many daily, weekly and monthly
rollovers, across a year boundary and ISO week 53, history equals the standings each period
had when it closed, pages without a gap or a duplicate, and keeps answering once the rollover
freed the period's serving keys. A page is one backward range scan of one index, however long
the player's history is (checked on the plan, not timed)."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest

from leaderboard.domain.auth import Caller
from leaderboard.domain.errors import NotFound
from leaderboard.domain.periods import current_period
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.reads import ReadService
from leaderboard.services.rollover import Rollover
from leaderboard.services.scores import ScoreService
from leaderboard.stores.postgres import archive_reads
from leaderboard.stores.postgres.archive import ArchiveStore
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from tests.support.boards import ListSink, MovableClock, publish

ADMIN = Caller("admin", frozenset({"leaderboard/admin"}))
SERVER = Caller("game-server", frozenset({"leaderboard/server"}))
PLAYERS = [f"p{n}" for n in range(9)]
REGIONS = (None, "EU", "NA")
KINDS = ("daily", "weekly", "monthly")


def _history(reads: ReadService, board_id: str, player: str, query: dict[str, str]) -> list:
    """Every page, following `next`; checks each page's size and that periods only go back."""
    results: list[dict[str, Any]] = []
    limit = int(query.get("limit", "10"))
    before: str | None = None
    while True:
        page = reads.history(board_id, player, query | ({"before": before} if before else {}))
        assert len(page["results"]) <= limit
        results += page["results"]
        if page["next"] is None:
            return results
        assert len(page["results"]) == limit and page["next"] == page["results"][-1]["period"]
        before = page["next"]


@pytest.mark.parametrize(
    "rules",
    [
        {"mode": "best", "sort": "desc", "ties": "shared"},
        {"mode": "increment", "sort": "asc", "ties": "first", "max_entries": 6},
    ],
    ids=["best-desc-shared", "increment-asc-first-trimmed"],
)
def test_history_is_the_standings_each_period_closed_with(index, database_url, board_id, rules):
    db = Database(database_url)
    # Monday of 2026-W51; the run crosses 2026-W53 (Dec 28 - Jan 3), a new year, and the end
    # of December and January, with a rollover every day as the schedule would run it.
    clock = MovableClock(datetime(2026, 12, 14, 9, 0, tzinfo=UTC))
    BoardAdminService(db, index, clock).put_board(
        board_id, {"regions": ["EU", "NA"], "periods": ["all-time", *KINDS], **rules}, ADMIN
    )
    sink = ListSink()
    scores = ScoreService(index, sink, clock)
    reads = ReadService(index, clock, archive=lambda: ArchiveStore(db))
    rollover = Rollover(db, index, clock, chunk_size=4, retention=timedelta(days=3))
    rng = random.Random(13)
    closed: dict[tuple[str, str | None], dict[str, Any]] = {}  # (period, region) -> entries

    end = datetime(2027, 2, 2, tzinfo=UTC)
    while clock.now < end:
        for _ in range(rng.randrange(2, 7)):
            body = {"player_id": rng.choice(PLAYERS[: rng.randrange(2, 10)]), "score": 0}
            body["score"] = rng.randrange(1, 40)
            if region := rng.choice(REGIONS):
                body["region"] = region
            scores.submit(board_id, body, SERVER, None)
        tomorrow = clock.now + timedelta(days=1)
        for kind in KINDS:  # the standings of every period about to close, as they stand
            period = current_period(kind, clock.now)
            if period.ends_at is not None and period.ends_at <= tomorrow:
                for region in REGIONS:
                    query = {"period": period.id, "limit": "100"}
                    closed[(period.id, region)] = reads.entries(
                        board_id, query | ({"region": region} if region else {})
                    )
        clock.now = tomorrow.replace(hour=0, minute=5)
        StandingsStore(db).write(sink.events)
        sink.events.clear()
        report = rollover.run(board_ids={board_id})
        assert report.complete and report.differences == 0, report
        clock.now = clock.now.replace(hour=9)

    archived = {pid for (pid, _region) in closed}
    assert {"2026-W53", "2026-12-31", "2027-01-01", "2026-12", "2027-01"} <= archived
    purged = index.period_sets(board_id)[1]
    assert not any(s.startswith("2026-W53") for s in purged), "its serving keys were freed"

    expected: dict[tuple[str, str, str | None], list[dict[str, Any]]] = defaultdict(list)
    for (period_id, region), snapshot in sorted(closed.items(), key=lambda kv: kv[0][0])[::-1]:
        kind = current_period_kind(period_id)
        for entry in snapshot["entries"]:
            expected[(entry["player_id"], kind, region)].append(
                {
                    "period": period_id,
                    "rank": entry["rank"],
                    "score": entry["score"],
                    "total": snapshot["total"],
                    "top_percent": round(100 * entry["rank"] / snapshot["total"], 4),
                }
            )
    checked = 0
    for player in [*PLAYERS, "nobody"]:
        for kind in KINDS:
            for region in REGIONS:
                want = expected.get((player, kind, region), [])
                base = {"kind": kind} | ({"region": region} if region else {})
                for limit in ("1", "3", "100"):
                    got = _history(reads, board_id, player, base | {"limit": limit})
                    assert got == want, (player, kind, region, limit)
                checked += len(want)
    assert checked > 300

    # Past periods answer after their keys were freed: many players at once, from the archive.
    friends = ",".join(PLAYERS)
    for (period_id, region), snapshot in closed.items():
        query = {"period": period_id, "ids": friends} | ({"region": region} if region else {})
        if snapshot["total"] == 0:
            with pytest.raises(NotFound):
                reads.players(board_id, query)
            continue
        got = reads.players(board_id, query)
        assert got["entries"] == snapshot["entries"], (period_id, region)
        assert got["missing"] == [
            p for p in PLAYERS if p not in {e["player_id"] for e in snapshot["entries"]}
        ]


def current_period_kind(period_id: str) -> str:
    from leaderboard.domain.periods import parse_period_id

    return parse_period_id(period_id).kind


def test_history_of_an_unknown_board_is_404_and_of_a_new_player_empty(
    index, database_url, board_id, clock
):
    db = Database(database_url)
    BoardAdminService(db, index, clock).put_board(board_id, {}, ADMIN)
    reads = ReadService(index, clock, archive=lambda: ArchiveStore(db))
    page = reads.history(board_id, "p-1", {})
    assert page == {
        "board_id": board_id,
        "player_id": "p-1",
        "kind": "weekly",
        "region": None,
        "results": [],
        "next": None,
    }
    with pytest.raises(NotFound):
        reads.history(f"{board_id}-missing", "p-1", {})


# --- one page is one range scan -------------------------------------------------------------


def _fill(conn: psycopg.Connection, board_id: str) -> None:
    """Ten years of weekly periods (and a year of days) with 40 players each; `veteran` is in
    every one, `rookie` in one. Written straight to the archive tables, as the rollover would."""
    weeks = []
    day = datetime(2016, 11, 21, tzinfo=UTC)
    for _ in range(520):
        weeks.append(current_period("weekly", day).id)
        day += timedelta(days=7)
    days = [
        (datetime(2026, 1, 1, tzinfo=UTC) + timedelta(days=n)).date().isoformat()
        for n in range(365)
    ]
    rows = []
    for kind, ids in (("weekly", weeks), ("daily", days)):
        for period_id in ids:
            players = [f"x{n}" for n in range(38)] + ["veteran"]
            if period_id == weeks[200]:
                players.append("rookie")
            for position, player in enumerate(players):
                rows.append(
                    (
                        board_id,
                        period_id,
                        kind,
                        "",
                        position,
                        position + 1,
                        player,
                        float(1000 - position),
                    )
                )
    with conn.cursor().copy(
        "COPY archive_entries (board_id, period, kind, region, position, rank, player_id, score)"
        " FROM STDIN"
    ) as copy:
        for row in rows:
            copy.write_row(row)
    conn.execute(
        "INSERT INTO archived_totals (board_id, period, region, entries)"
        " SELECT board_id, period, region, count(*) FROM archive_entries WHERE board_id = %s"
        " GROUP BY board_id, period, region",
        (board_id,),
    )
    conn.execute("ANALYZE archive_entries")
    conn.execute("ANALYZE archived_totals")


def _nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    found = [plan]
    for child in plan.get("Plans", []):
        found += _nodes(child)
    return found


def test_a_page_is_one_backward_range_scan_however_long_the_history(index, database_url, board_id):
    with psycopg.connect(database_url, autocommit=True) as conn:
        _fill(conn, board_id)
        for player, before, limit in [
            ("veteran", None, 10),
            ("veteran", "2021-W30", 10),  # deep in ten years of weeks
            ("veteran", "2016-W50", 10),  # near the start: fewer than a page left
            ("veteran", None, 100),
            ("rookie", None, 10),
        ]:
            query = archive_reads._HISTORY_BEFORE if before else archive_reads._HISTORY_LATEST
            params = {"b": board_id, "player": player, "k": "weekly", "r": "", "before": before}
            plan = conn.execute(
                "EXPLAIN (ANALYZE, FORMAT JSON) " + query, params | {"n": limit + 1}
            ).fetchone()
            assert plan is not None
            top = (plan[0] if isinstance(plan[0], list) else json.loads(plan[0]))[0]["Plan"]
            nodes = _nodes(top)
            scans = [n for n in nodes if n.get("Relation Name") == "archive_entries"]
            assert len(scans) == 1, nodes
            scan = scans[0]
            assert scan["Node Type"] in ("Index Scan", "Index Only Scan"), scan
            assert scan["Index Name"] == "archive_entries_history" and (
                scan["Scan Direction"] == "Backward"
            ), scan
            assert "Filter" not in scan, "every condition is an index bound"
            assert scan["Actual Rows"] <= limit + 1, scan  # stops after the page
            assert not [n for n in nodes if n["Node Type"] in ("Sort", "Seq Scan")], nodes

    # And the pages, end to end: all 520 weeks in order, none twice.
    publish(index, board_id)
    reads = ReadService(index, archive=lambda: ArchiveStore(Database(database_url)))
    weeks = [r["period"] for r in _history(reads, board_id, "veteran", {"limit": "100"})]
    assert len(weeks) == len(set(weeks)) == 520 and weeks == sorted(weeks, reverse=True)
    assert [r["period"] for r in _history(reads, board_id, "rookie", {})] == [weeks[-201]]
    days = _history(reads, board_id, "veteran", {"kind": "daily", "limit": "100"})
    assert len(days) == 365 and days[0]["period"] == "2026-12-31"
    assert days[0]["rank"] == 39 and days[0]["total"] == 39
