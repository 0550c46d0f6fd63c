"""Issue 24, acceptance 2: however a period ends (its schedule, by hand, a tournament's end), the
rollover archives exactly the final standings, resumes after being stopped at any step (between
any two chunks, or killed right after its event left), and emits one event with one id: every
emission of a period is the same bytes."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from leaderboard.domain.auth import Caller
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.reads import ReadService
from leaderboard.services.rollover import Rollover
from leaderboard.services.scores import ScoreService
from leaderboard.stores.aws.event_bus import ListSink as EventListSink
from leaderboard.stores.postgres.archive import ArchiveStore
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from tests.services.test_rollover import _archive_rows, _play, _reads_of, _strip_metadata
from tests.support.boards import ListSink, MovableClock

ADMIN = Caller("admin", frozenset({"leaderboard/admin"}))
START = datetime(2026, 12, 5, 18, 0, tzinfo=UTC)
REWARDS = {"top": 5, "tiers": [{"name": "podium", "ranks": [1, 3]}]}


class Killed(BaseException):
    """The process dies (not an error the rollover handles)."""


class _DiesAfterEmitting(EventListSink):
    def emit(self, event) -> None:
        super().emit(event)
        raise Killed


def _board(kind: str) -> dict:
    common = {"mode": "best", "regions": ["EU", "NA"], "rewards": REWARDS}
    if kind == "schedule":  # daily at 19:00 in Berlin: ends 18:00 UTC on 2026-12-06
        return common | {
            "periods": ["custom"],
            "schedule": {"cron": "0 19 * * *", "timezone": "Europe/Berlin"},
        }
    if kind == "manual":
        return common | {"periods": ["custom"], "schedule": {"timezone": "UTC"}}
    return common | {
        "tournament": {"starts_at": "2026-12-05T18:00:00Z", "ends_at": "2026-12-06T18:00:00Z"}
    }


@pytest.mark.parametrize("stop", ["chunk-1", "chunk-4", "chunk-7", "after-emit"])
@pytest.mark.parametrize("kind", ["schedule", "manual", "tournament"])
def test_each_end_archives_the_final_standings_once_with_one_event(index, database_url, kind, stop):
    clock = MovableClock(START + timedelta(hours=1))
    db = Database(database_url)
    board_id = f"end-{kind}-{uuid.uuid4().hex[:10]}"
    admin = BoardAdminService(db, index, clock)
    admin.put_board(board_id, _board(kind), ADMIN)
    sink = ListSink()
    _play(ScoreService(index, sink, clock), board_id, seed=len(kind) + len(stop), count=60)
    reads = ReadService(index, clock, archive=lambda: ArchiveStore(db))
    period = reads.entries(board_id, {"period": "custom"})["period"]
    final = _strip_metadata(_reads_of(reads, board_id, period))

    if kind == "manual":
        clock.now = START + timedelta(hours=23, minutes=59)
        admin.end_period(board_id, ADMIN)
    clock.now = START + timedelta(days=1, seconds=5)  # every kind has ended by now
    StandingsStore(db).write(sink.events)

    emitted = EventListSink()
    if stop == "after-emit":
        dying = _DiesAfterEmitting()
        with pytest.raises(Killed):
            Rollover(db, index, clock, chunk_size=4, sink=dying).run(board_ids={board_id})
        emitted.events.extend(dying.events)
    else:
        chunks = int(stop.split("-")[1])
        calls = {"n": 0}

        def cut_off() -> bool:
            calls["n"] += 1
            return calls["n"] <= chunks

        rollover = Rollover(db, index, clock, chunk_size=4, sink=emitted)
        assert rollover.run(keep_going=cut_off, board_ids={board_id}).complete is False
    rollover = Rollover(db, index, clock, chunk_size=4, sink=emitted)
    report = rollover.run(board_ids={board_id})
    assert report.complete and report.archived == [f"{board_id}/{period}"]
    assert rollover.run(board_ids={board_id}).archived == []

    # exactly the final standings, every region, positions without gap or repeat
    rows = _archive_rows(database_url, board_id, period)
    for region in ("", "EU", "NA"):
        archived = [(r[2], r[3]) for r in rows if r[0] == region]
        shown = final[("entries", region or None)]["entries"]
        assert archived == [(e["rank"], e["player_id"]) for e in shown], region
        assert [r[1] for r in rows if r[0] == region] == list(range(len(archived)))
    assert _strip_metadata(_reads_of(reads, board_id, period)) == final

    # one event, one id: every emission the same bytes
    assert len({e.event_id for e in emitted.events}) == 1
    assert len({e.to_json() for e in emitted.events}) == 1
    data = emitted.events[0].envelope()["data"]
    assert data["reason"] == kind
    assert data["period"]["id"] == period
    assert data["total_entries"] == final[("entries", None)]["total"]
    podium = [e["player_id"] for e in final[("entries", None)]["entries"] if e["rank"] <= 3]
    assert [p["player_id"] for p in data["tiers"][0]["players"]] == podium
