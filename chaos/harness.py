"""The fault-injection harness: it owns the stores so it can hurt them.

It starts Valkey, PostgreSQL and the SQS endpoint itself (devstack.servers), runs the local
stack in this process against them (`LocalStack` with REDIS_URL / DATABASE_URL /
SQS_ENDPOINT_URL set, the schedules sped up by LOCAL_SCHEDULE_SCALE), drives it over real HTTP
with concurrent clients, injects faults in turn, and hands what the clients saw to the
independent checker (chaos/checker.py), which reads the stores from the outside.
"""

from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import logging
import os
import random
import shutil
import signal
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

import boto3
import psycopg
from botocore.config import Config

from chaos.checker import RETRYABLE, Board, Submission, Verdict, check
from devstack import tokens
from devstack.live_client import LiveClient
from devstack.servers import EmbeddedPostgres, EmbeddedValkey, LocalSQS, free_port
from devstack.stack import LocalStack, StackConfig

log = logging.getLogger("chaos")
SCHEDULE_SCALE = "0.05"  # the every-minute maintenance (relay, rebuild of lost boards) every 3 s
# The template's 360 s (six times the persister's timeout) would hold a failed batch back for
# six minutes; the harness shortens it so a run recovers in seconds (duplicate deliveries of a
# batch still running are harmless: the persister stores an event id once).
VISIBILITY_TIMEOUT = 10
CLIENT_TIMEOUT = 15.0  # above the write function's 10 s timeout: the gateway answers first
CONNECTION_ERROR = -1
TIMEOUT = -2

BOARDS = [
    # (board, rules) covering every mode, both ties, asc/desc, regions and several periods.
    Board("inc-desc-shared", "increment", "desc", "shared",
          ("all-time", "daily", "weekly", "monthly"), ("EU", "NA")),
    Board("inc-asc-first", "increment", "asc", "first", ("all-time", "daily")),
    Board("best-desc-first", "best", "desc", "first",
          ("all-time", "weekly", "monthly"), ("EU", "NA", "ASIA")),
    Board("best-asc-shared", "best", "asc", "shared", ("all-time", "daily", "weekly")),
    Board("set-desc-shared", "set", "desc", "shared", ("all-time", "monthly"), ("EU", "NA")),
    Board("set-asc-first", "set", "asc", "first", ("all-time", "daily", "weekly", "monthly")),
]  # fmt: skip
MAX_INCREMENT = 100  # on inc-desc-shared: a larger increment must be refused (400/422)
MAX_SCORE = 1000  # on set-desc-shared: a larger score must be refused (400/422)


def board_rules(board: Board) -> dict[str, Any]:
    rules: dict[str, Any] = {
        "title": board.board_id,
        "mode": board.mode,
        "sort": board.sort,
        "ties": board.ties,
        "periods": list(board.periods),
    }
    if board.regions:
        rules["regions"] = list(board.regions)
    if board.shards > 1:
        rules["shards"] = board.shards
    if board.board_id == "inc-desc-shared":
        rules["max_increment"] = MAX_INCREMENT
    if board.board_id == "set-desc-shared":
        rules["min_score"], rules["max_score"] = 0, MAX_SCORE
    return rules


@dataclass
class Attempt:
    key: str
    board_id: str
    started: float  # time.monotonic()
    ended: float
    status: int  # HTTP status, CONNECTION_ERROR or TIMEOUT
    replayed: bool = False


@dataclass
class FaultWindow:
    name: str
    description: str
    started: float
    ended: float = 0.0
    recovered_at: float | None = None  # first acknowledged write on every board
    drained_at: float | None = None  # every write acknowledged so far is in PostgreSQL
    redis_back_at: float | None = None  # Valkey faults: when it answered PING again
    details: dict[str, Any] = field(default_factory=dict)


class Client:
    """One HTTP/1.1 keep-alive connection, reopened after any error."""

    def __init__(self, host: str, port: int, token: str) -> None:
        self.host, self.port, self.token = host, port, token
        self.conn: http.client.HTTPConnection | None = None

    def request(
        self, method: str, path: str, body: Any = None, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], Any]:
        if self.conn is None:
            self.conn = http.client.HTTPConnection(self.host, self.port, timeout=CLIENT_TIMEOUT)
        sent = {"authorization": f"Bearer {self.token}", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            sent["content-type"] = "application/json"
        try:
            self.conn.request(method, path, data, sent)
            response = self.conn.getresponse()
            raw = response.read()
        except BaseException:
            self.close()
            raise
        if response.will_close:
            self.close()
        answer = {k.lower(): v for k, v in response.getheaders()}
        try:
            parsed = json.loads(raw) if raw else None
        except ValueError:
            parsed = raw.decode(errors="replace")
        return response.status, answer, parsed

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None


class Harness:
    """The stores, the stack on top of them, the clients and the record of what they saw."""

    def __init__(
        self, workdir: Path | None = None, seed: int = 12, boards: list[Board] | None = None
    ) -> None:
        self.base = Path(workdir or tempfile.mkdtemp(prefix="lb-chaos-"))
        self.base.mkdir(parents=True, exist_ok=True)
        self.base.chmod(0o755)  # the embedded PostgreSQL user must reach it under root
        self.rng = random.Random(seed)
        self.valkey = EmbeddedValkey()
        self.postgres = EmbeddedPostgres()
        self.sqs = LocalSQS()
        self.stack: LocalStack | None = None
        self.database_url = ""
        self.redis_url = ""
        self.redis_cluster = False
        self.boards = list(boards or BOARDS)
        self.submissions: list[Submission] = []
        self.attempts: list[Attempt] = []
        self.reads: Counter[int] = Counter()
        self.windows: list[FaultWindow] = []
        self.queue_samples: list[tuple[float, int | None]] = []
        self.live_messages: list[tuple[float, str]] = []  # (monotonic, board) as received
        self._lock = threading.Lock()
        self._seq = itertools.count(1)  # the clients' order of submissions, across load phases
        self._stop_load = threading.Event()
        self._threads: list[threading.Thread] = []
        self._monitor_stop = threading.Event()
        self._monitor: threading.Thread | None = None
        self._saved_env: dict[str, str | None] = {}
        self.started_at = time.monotonic()

    # ------------------------------------------------------------------ lifetime

    def start(self) -> None:
        self.redis_url = self._start_redis()
        self.postgres.start()
        self.database_url = self.postgres.create_database("leaderboard")
        self.sqs.start()
        env = {
            "REDIS_URL": self.redis_url,
            "REDIS_CLUSTER": "true" if self.redis_cluster else "false",
            # On the cluster (a replica per master) a write is acknowledged once a replica
            # has it, as the template's cluster mode has it: the failover must lose nothing.
            "REDIS_REPLICA_ACKS": "1" if self.redis_cluster else "0",
            "DATABASE_URL": self.database_url,
            "SQS_ENDPOINT_URL": self.sqs.endpoint_url,
            "LOCAL_SCHEDULE_SCALE": SCHEDULE_SCALE,
        }
        for name, value in env.items():
            self._saved_env[name] = os.environ.get(name)
            os.environ[name] = value
        config = StackConfig(data_dir=self.base / "stack", port=free_port(), concurrency=2)
        self.stack = LocalStack(config)
        self.stack.start()
        self.sqs.client().set_queue_attributes(
            QueueUrl=self.stack.env["SCORE_QUEUE_URL"],
            Attributes={"VisibilityTimeout": str(VISIBILITY_TIMEOUT)},
        )
        secret = tokens.local_secret(config.data_dir)
        self.admin_token = tokens.mint(secret, "chaos-admin", "leaderboard/admin")
        self.server_token = tokens.mint(secret, "chaos-server", "leaderboard/server")
        host, port = self.address
        admin = Client(host, port, self.admin_token)
        for board in self.boards:
            status, _, body = admin.request("PUT", f"/boards/{board.board_id}", board_rules(board))
            if status not in (200, 201):
                raise RuntimeError(f"creating {board.board_id}: {status} {body}")
        admin.close()
        self._monitor = threading.Thread(target=self._watch_queue, name="chaos-queue", daemon=True)
        self._monitor.start()
        self._listener = threading.Thread(target=self._listen, name="chaos-live", daemon=True)
        self._listener.start()

    def stop(self) -> None:
        self._stop_load.set()
        self._monitor_stop.set()
        for thread in self._threads:
            thread.join(CLIENT_TIMEOUT + 5)
        if self.stack is not None:
            with contextlib.suppress(Exception):
                self.stack.stop()
        for server in (self.sqs, self.postgres):
            with contextlib.suppress(Exception):
                if server.is_running():
                    os.kill(server.pid, signal.SIGCONT)  # a fault cut short must not hang stop
                server.stop()
        with contextlib.suppress(Exception):
            self._stop_redis()
        for name, value in self._saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        shutil.rmtree(self.base, ignore_errors=True)

    def _start_redis(self) -> str:
        """Start the serving index; its URL (a cluster harness starts a cluster instead)."""
        self.valkey.start()
        return self.valkey.url

    def _stop_redis(self) -> None:
        if self.valkey.is_running():
            os.kill(self.valkey.pid, signal.SIGCONT)  # a fault cut short must not hang stop
        self.valkey.stop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def address(self) -> tuple[str, int]:
        assert self.stack is not None
        host, port = self.stack.url.removeprefix("http://").rsplit(":", 1)
        return host, int(port)

    def now(self) -> float:
        return time.monotonic() - self.started_at

    # ------------------------------------------------------------------ load

    def start_load(self, writers: int, readers: int, pause: float, players: int = 8) -> None:
        """`writers` clients, each owning `players` players, and `readers` reading entries."""
        self._stop_load.clear()
        for n in range(writers):
            owned = [f"w{n}-p{i}" for i in range(players)]
            thread = threading.Thread(
                target=self._writer, args=(n, owned, pause), name=f"chaos-w{n}", daemon=True
            )
            self._threads.append(thread)
        for n in range(readers):
            thread = threading.Thread(
                target=self._reader, args=(n, pause), name=f"chaos-r{n}", daemon=True
            )
            self._threads.append(thread)
        for thread in self._threads:
            if not thread.is_alive():
                thread.start()

    def stop_load(self) -> None:
        """Let every client finish its current submission (until acknowledged), then stop."""
        self._stop_load.set()
        for thread in self._threads:
            thread.join(240)
        self._threads.clear()

    def _writer(self, n: int, players: list[str], pause: float) -> None:
        rng = random.Random(f"{n}-{self.rng.random()}")
        client = Client(*self.address, self.server_token)
        regions = {p: rng.choice([None, "EU", "NA"]) for p in players}
        while not self._stop_load.is_set():
            board = rng.choice(self.boards)
            player = rng.choice(players)
            submission = self._new_submission(board, player, regions[player], next(self._seq), rng)
            self._submit(client, submission)
            if pause:
                time.sleep(rng.uniform(0, 2 * pause))
        client.close()

    def _new_submission(
        self, board: Board, player: str, region: str | None, seq: int, rng: random.Random
    ) -> Submission:
        if region is not None and region not in board.regions:
            region = None
        expect_reject = False
        if board.mode == "increment":
            score: int = rng.randint(1, 5) if board.sort == "desc" else rng.randint(-3, 5)
        else:
            score = rng.randint(0, 60)
        if board.board_id == "inc-desc-shared" and rng.random() < 0.03:
            score, expect_reject = MAX_INCREMENT + rng.randint(1, 50), True
        if board.board_id == "set-desc-shared" and rng.random() < 0.03:
            score, expect_reject = MAX_SCORE + rng.randint(1, 50), True
        key = str(uuid.uuid4())
        return Submission(key, board.board_id, player, score, region, seq, expect_reject)

    def _submit(self, client: Client, sub: Submission, deadline: float = 180.0) -> None:
        """Until acknowledged, refused as expected, or the deadline: same key, same body."""
        body: dict[str, Any] = {"player_id": sub.player_id, "score": sub.score}
        if sub.region:
            body["region"] = sub.region
        body["metadata"] = {"n": sub.key, "seq": sub.seq}
        headers = {"idempotency-key": sub.key}
        path = f"/boards/{sub.board_id}/scores"
        give_up = time.monotonic() + deadline
        backoff = 0.1
        with self._lock:
            self.submissions.append(sub)
        while True:
            started = time.monotonic()
            replayed = False
            try:
                status, headers_in, answer = client.request("POST", path, body, headers)
                replayed = headers_in.get("idempotent-replayed") == "true"
            except TimeoutError:
                status, headers_in, answer = TIMEOUT, {}, None
            except (OSError, http.client.HTTPException):
                status, headers_in, answer = CONNECTION_ERROR, {}, None
            ended = time.monotonic()
            with self._lock:
                self.attempts.append(
                    Attempt(sub.key, sub.board_id, started, ended, status, replayed)
                )
            if status == 200:
                sub.acked = True
                sub.event_id = answer["event_id"]
                sub.version = answer.get("version")
                sub.standings = answer["standings"]
                return
            if status not in RETRYABLE and status > 0:
                sub.rejected_status = status
                return
            if ended >= give_up:
                return
            wait = backoff
            with contextlib.suppress(KeyError, ValueError):
                wait = min(float(headers_in["retry-after"]), 2.0)
            time.sleep(min(wait, backoff) * random.uniform(0.5, 1.5))
            backoff = min(backoff * 2, 2.0)

    def _reader(self, n: int, pause: float) -> None:
        rng = random.Random(f"r{n}")
        client = Client(*self.address, "")
        while not self._stop_load.is_set():
            board = rng.choice(self.boards)
            period = rng.choice(board.periods)
            try:
                status, _, _ = client.request(
                    "GET", f"/boards/{board.board_id}/entries?period={period}&limit=20"
                )
            except (OSError, http.client.HTTPException):
                status = CONNECTION_ERROR
            with self._lock:
                self.reads[status] += 1
            time.sleep(rng.uniform(0, 2 * pause) if pause else 0)
        client.close()

    # ------------------------------------------------------------------ observation

    def _listen(self) -> None:
        """A WebSocket subscriber to every board's channels, as a client would follow them:
        what it receives, and when, shows how soon live updates come back after a fault."""
        assert self.stack is not None
        config = self.stack.live_config()
        if config is None:
            return
        while not self._monitor_stop.is_set():
            try:
                with LiveClient(
                    config["realtime_url"], config["http_host"], config["api_key"]
                ) as client:
                    for board in self.boards:
                        client.subscribe(f"/{config['namespace']}/{board.board_id}/*")
                    while not self._monitor_stop.is_set():
                        with contextlib.suppress(TimeoutError):
                            message = client.next_event(0.5)
                            with self._lock:
                                self.live_messages.append((time.monotonic(), message["board_id"]))
            except (OSError, ConnectionError) as exc:
                log.warning("live subscriber: %s; reconnecting", exc)
                time.sleep(0.5)

    def first_live_message(self, after: float) -> float | None:
        """When the subscriber first received a message after `after` (monotonic), or None."""
        with self._lock:
            return next((at for at, _ in self.live_messages if at > after), None)

    def _redis_answering(self, limit: float = 30.0) -> float:
        client = self.valkey.client(socket_timeout=0.2)
        deadline = time.monotonic() + limit
        try:
            while time.monotonic() < deadline:
                with contextlib.suppress(Exception):
                    if client.ping():
                        return time.monotonic()
                time.sleep(0.01)
        finally:
            client.close()
        raise RuntimeError(f"Valkey did not answer within {limit} s")

    def queue_client(self) -> Any:
        assert self.stack is not None
        return boto3.client(
            "sqs",
            endpoint_url=self.stack.env["SQS_ENDPOINT_URL"],
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106 - moto accepts anything
            config=Config(connect_timeout=1, read_timeout=2, retries={"max_attempts": 1}),
        )

    def queue_depth(self, client: Any, dlq: bool = False) -> int | None:
        """Messages waiting, in flight or delayed (None while the endpoint is unreachable)."""
        assert self.stack is not None
        url = self.stack.env["SCORE_QUEUE_URL"]
        if dlq:
            url = url.rsplit("/", 1)[0] + "/leaderboard-scores-dlq"
        names = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        try:
            attrs = client.get_queue_attributes(QueueUrl=url, AttributeNames=names)["Attributes"]
        except Exception:
            return None
        return sum(int(attrs.get(n, 0)) for n in names)

    def _watch_queue(self) -> None:
        client = self.queue_client()
        while not self._monitor_stop.wait(1.0):
            self.queue_samples.append((self.now(), self.queue_depth(client)))

    def acked_event_ids(self, before: float | None = None) -> list[str]:
        with self._lock:
            keys = {
                a.key
                for a in self.attempts
                if a.status == 200 and (before is None or a.ended <= before)
            }
            return [s.event_id for s in self.submissions if s.key in keys and s.event_id]

    def stored_count(self, event_ids: list[str]) -> int | None:
        try:
            with psycopg.connect(self.database_url, connect_timeout=2, autocommit=True) as conn:
                row = conn.execute(
                    "SELECT count(*) FROM score_events WHERE event_id = ANY(%s::uuid[])",
                    (event_ids,),
                ).fetchone()
        except psycopg.Error:
            return None
        return int(row[0]) if row else 0

    def first_ack_on_any_board(self, after: float) -> float | None:
        """When the first write sent after `after` (monotonic) was acknowledged, or None."""
        with self._lock:
            acks = [a.ended for a in self.attempts if a.status == 200 and a.started >= after]
        return min(acks, default=None)

    def first_ack_on_every_board(self, after: float) -> float | None:
        """When every board had acknowledged a write sent after `after` (monotonic), or None."""
        firsts: dict[str, float] = {}
        with self._lock:
            for a in self.attempts:
                if a.status == 200 and a.started >= after:
                    firsts[a.board_id] = min(firsts.get(a.board_id, a.ended), a.ended)
        if len(firsts) < len(self.boards):
            return None
        return max(firsts.values())

    # ------------------------------------------------------------------ faults

    @contextlib.contextmanager
    def fault(self, name: str, description: str) -> Iterator[FaultWindow]:
        window = FaultWindow(name, description, time.monotonic())
        log.info("fault %s: %s", name, description)
        self.windows.append(window)
        try:
            yield window
        finally:
            window.ended = time.monotonic()

    def recover(self, window: FaultWindow, limit: float = 120.0, quiet: float = 2.0) -> None:
        """Wait for the first acknowledged write on every board after the fault, and for every
        write acknowledged up to then to be in PostgreSQL; then a quiet gap."""
        deadline = window.ended + limit
        want = self.acked_event_ids(before=window.ended)
        while time.monotonic() < deadline:
            if window.recovered_at is None:
                window.recovered_at = self.first_ack_on_every_board(window.ended)
            if window.drained_at is None and self.stored_count(want) == len(want):
                window.drained_at = time.monotonic()
            if window.recovered_at is not None and window.drained_at is not None:
                break
            time.sleep(0.25)
        log.info(
            "fault %s: recovered in %s s, drained in %s s",
            window.name,
            _seconds(window.recovered_at, window.ended),
            _seconds(window.drained_at, window.ended),
        )
        time.sleep(quiet)

    def kill_valkey(self) -> None:
        with self.fault(
            "valkey-kill", "Valkey SIGKILLed, restarted empty on the same port"
        ) as window:
            self.valkey.kill()
            time.sleep(0.5)
            self.valkey.start()
            window.redis_back_at = self._redis_answering()

    def freeze_valkey(self, seconds: float) -> None:
        with self.fault(
            "valkey-freeze", f"Valkey SIGSTOPped for {seconds:g} s, then SIGCONT"
        ) as window:
            os.kill(self.valkey.pid, signal.SIGSTOP)
            try:
                time.sleep(seconds)
            finally:
                os.kill(self.valkey.pid, signal.SIGCONT)
            window.redis_back_at = self._redis_answering()

    def restart_postgres(self) -> None:
        with self.fault("postgres-restart", "PostgreSQL stopped (fast) and started again"):
            self.postgres.restart()

    def pause_sqs(self, seconds: float) -> None:
        with self.fault("sqs-unreachable", f"the SQS endpoint SIGSTOPped for {seconds:g} s"):
            os.kill(self.sqs.pid, signal.SIGSTOP)
            try:
                time.sleep(seconds)
            finally:
                os.kill(self.sqs.pid, signal.SIGCONT)

    def kill_workers(self, seconds: float, every: float = 1.0) -> None:
        """SIGKILL a busy ApiWriteFunction worker every `every` s (and a persister worker once
        in the middle of its batch, if one is busy)."""
        assert self.stack is not None
        with self.fault(
            "worker-kill", f"busy write workers SIGKILLed every {every:g} s for {seconds:g} s"
        ) as window:
            end = time.monotonic() + seconds
            killed: Counter[str] = Counter()
            persister_done = False
            while time.monotonic() < end:
                if _kill_busy(self.stack, "ApiWriteFunction"):
                    killed["ApiWriteFunction"] += 1
                if not persister_done and _kill_busy(self.stack, "PersisterFunction"):
                    killed["PersisterFunction"] += 1
                    persister_done = True
                time.sleep(every)
            window.details["killed"] = dict(killed)

    def fail_persister_batches(self, seconds: float, every: float = 0.1) -> None:
        """pg_terminate_backend on connections writing score events, again and again."""
        with self.fault(
            "persister-batches",
            f"pg_terminate_backend on score_events writers every {every:g} s for {seconds:g} s",
        ) as window:
            end = time.monotonic() + seconds
            terminated = 0
            with psycopg.connect(self.database_url, autocommit=True) as conn:
                while time.monotonic() < end:
                    rows = conn.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
                        " AND query ILIKE '%%score_events%%'"
                    ).fetchall()
                    terminated += sum(1 for (done,) in rows if done)
                    time.sleep(every)
            window.details["terminated"] = terminated

    # ------------------------------------------------------------------ the end

    def settle(self, limit: float = 180.0) -> float:
        """Wait until every acknowledged write is stored and the queue is empty; seconds taken."""
        started = time.monotonic()
        want = self.acked_event_ids()
        client = self.queue_client()
        while time.monotonic() - started < limit:
            if self.stored_count(want) == len(want) and self.queue_depth(client) == 0:
                break
            time.sleep(0.5)
        return time.monotonic() - started

    def verdict(self, attempts_statuses: Counter[int] | None = None) -> Verdict:
        statuses: Counter[int] = Counter(a.status for a in self.attempts)
        statuses.update(self.reads)
        with self._lock:
            submissions = list(self.submissions)
        return check(
            self.boards,
            submissions,
            dict(statuses),
            self.database_url,
            self.redis_url,
            cluster=self.redis_cluster,
        )

    def check_until_consistent(self, limit: float = 90.0) -> Verdict:
        """The checker's verdict once the stores have settled: the relay may still be sending
        an outbox event (its age threshold is a minute), so a difference is looked at again."""
        deadline = time.monotonic() + limit
        while True:
            verdict = self.verdict()
            if verdict.ok or time.monotonic() >= deadline:
                return verdict
            log.info("checker: not consistent yet (%s); looking again in 5 s", verdict.examples[:3])
            time.sleep(5)


def _seconds(at: float | None, since: float) -> str:
    return "-" if at is None else f"{at - since:.1f}"


def _kill_busy(stack: LocalStack, function: str) -> bool:
    """SIGKILL one worker of `function` that is serving a request (not idle), if any."""
    pool = stack.pools[function]
    idle = {id(w) for w in pool._idle}
    busy = [w for w in list(pool._workers) if id(w) not in idle and w.alive()]
    if not busy:
        return False
    with contextlib.suppress(ProcessLookupError):
        os.kill(busy[0].process.pid, signal.SIGKILL)
        return True
    return False


FaultStep = Callable[[Harness], None]
