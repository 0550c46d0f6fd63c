"""Fuzzing the real local stack from docs/openapi.json with schemathesis.

Every operation of the document is called on a LocalStack (embedded Valkey and PostgreSQL, the
functions in their worker processes, the gateway on a free port) with a valid token of each
scope, from the examples, the coverage cases (boundaries and each constraint broken on its own)
and property-based generation, valid and invalid. Checks: no 5xx; every status, content type,
header and body as the document says; auth that the document demands is really demanded; and our
own: a write that was refused (4xx) changed nothing of its board, in Redis or PostgreSQL.

Then the persister drains what the accepted writes queued: nothing may fail to be stored, and
every board written to serves what PostgreSQL records.

Bounded in `make test` (FUZZ_EXAMPLES generated cases per operation and scope, derandomized);
`make fuzz` runs thousands, with a fresh seed unless FUZZ_SEED is set (hypothesis prints the seed
of a failure). Each finding is fixed and has a plain regression test in
tests/functions/test_fuzz_findings.py.
"""

from __future__ import annotations

import calendar
import json
import os
import re
import shutil
import tempfile
import urllib.request
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import boto3
import psycopg
import pytest
import schemathesis
from hypothesis import HealthCheck, seed, settings
from redis import Redis
from schemathesis.generation.meta import TestPhase
from schemathesis.specs.openapi.checks import positive_data_acceptance, unsupported_method

from devstack import tokens
from devstack.consistency import assert_redis_equals_postgres
from devstack.queue_consumer import sqs_record
from devstack.servers import free_port
from devstack.stack import DLQ_NAME, LocalStack, StackConfig
from leaderboard.stores.redis.client import connect

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

DOCUMENT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "8"))
FUZZ_SEED = os.environ.get("FUZZ_SEED")  # unset: derandomized (the same cases every run)
LONG = "FUZZ_EXAMPLES" in os.environ  # `make fuzz`: a fresh seed each run unless FUZZ_SEED
SCHEMA = schemathesis.openapi.from_path(DOCUMENT)

# Boards and players seeded before the fuzz, so that requests also meet ones that exist.
SEEDED = {
    "arena": {"regions": ["EU", "NA"], "periods": ["all-time", "daily", "weekly", "monthly"]},
    "fuzz-asc": {
        "sort": "asc",
        "mode": "best",
        "ties": "first",
        "max_entries": 5,
        "min_score": -1000,
        "max_score": 1000,
    },
    "fuzz-set": {"mode": "set", "regions": ["ASIA"], "rate_limit_per_minute": 600},
}
PLAYERS = ["p-1", "ada", "bob"]  # p-1 is the player token's subject
PERSISTED_TABLES = [
    "boards",
    "score_events",
    "standings",
    "player_metadata",
    "player_tombstones",
    "archived_periods",
    "archive_entries",
]
BOARD_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")
PLAYER_ID = re.compile(r"[A-Za-z0-9_.:@-]{1,64}")


@dataclass
class Fuzzed:
    """The stack under fuzz and what the run did to it."""

    stack: LocalStack
    bearer: dict[str, str]
    redis: Any
    database: psycopg.Connection[Any]
    sqs: Any
    written: set[str] = field(default_factory=set)  # boards an accepted write changed
    calls: dict[str, dict[int, int]] = field(default_factory=dict)  # operation: status: count
    stored: int = 0  # submissions the persister stored

    def drain(self) -> None:
        """Hand what the accepted writes queued to the persister, as Lambda's SQS event source
        would; every record must be stored (a failed one is a finding, shown with its body)."""
        url = self.stack.env["SCORE_QUEUE_URL"]
        arn = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        while True:
            messages = self.sqs.receive_message(
                QueueUrl=url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=0,
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            if not messages:
                return
            records = [
                sqs_record(m, arn["Attributes"]["QueueArn"], self.sqs.meta.region_name)
                for m in messages
            ]
            result = self.stack.invoke("PersisterFunction", {"Records": records}) or {}
            failed = {f["itemIdentifier"] for f in result.get("batchItemFailures", [])}
            assert not failed, [m["Body"] for m in messages if m["MessageId"] in failed]
            self.sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(messages)
                ],
            )
            self.stored += len(messages)

    def fingerprint(self, board_id: str) -> dict[str, Any]:
        """Everything stored for a board but its rate-limit buckets and the live publisher's
        marker: every Redis key under its hash tag (DUMP of the value), its catalog entry, and
        its rows in every PostgreSQL table."""
        prefix = f"lb:{{{board_id}}}:".encode()
        skip = (prefix + b"rl:", prefix + b"live")
        pattern = "lb:\\{" + re.sub(r"([*?\[\]\\])", r"\\\1", board_id) + "\\}:*"
        keys = sorted(k for k in self.redis.scan_iter(match=pattern, count=1000))
        redis = {k: self.redis.dump(k) for k in keys if not k.startswith(skip)}
        rows = {
            table: self.database.execute(
                f"SELECT t::text FROM {table} t WHERE board_id = %s ORDER BY 1",
                (board_id,),
            ).fetchall()
            for table in PERSISTED_TABLES
        }
        return {"redis": redis, "catalog": self.redis.hget("lb:boards", board_id), "pg": rows}


def _http(url: str, method: str, body: Any, token: str) -> tuple[int, Any]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method=method,
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.status, json.loads(response.read())


@pytest.fixture(scope="module")
def fuzzed() -> Iterator[Fuzzed]:
    """A quiet LocalStack: no queue consumer and no schedules while the fuzz runs, so a
    board's stored state changes only when a request changes it."""
    base = Path(tempfile.mkdtemp(prefix="lb-fuzz-"))
    base.chmod(0o755)  # the embedded PostgreSQL user must reach it when running as root
    local = LocalStack(StackConfig(data_dir=base / "data", port=free_port(), concurrency=1))
    with pytest.MonkeyPatch.context() as env:
        for name in ("REDIS_URL", "DATABASE_URL", "SQS_ENDPOINT_URL"):
            env.delenv(name, raising=False)  # embedded servers, as on a fresh machine
        env.setattr(LocalStack, "_start_consumers", lambda self: None)
        env.setattr(LocalStack, "_start_schedules", lambda self: None)
        try:
            local.start()
            secret = tokens.local_secret(local.config.data_dir)
            bearer = {
                "admin": tokens.mint(secret, "ops", "leaderboard/admin"),
                "server": tokens.mint(secret, "game-server", "leaderboard/server"),
                "player": tokens.mint(secret, "p-1"),
            }
            for board_id, rules in SEEDED.items():
                url = f"{local.url}/boards/{board_id}"
                assert _http(url, "PUT", rules, bearer["admin"])[0] == 201
                for n, player in enumerate(PLAYERS):
                    body = {"player_id": player, "score": 10 * (n + 1), "metadata": {"n": n}}
                    if rules.get("regions"):
                        body["region"] = rules["regions"][0]
                    assert _http(url + "/scores", "POST", body, bearer["server"])[0] == 200
            redis = Redis.from_url(local.env["REDIS_URL"])  # raw bytes, for DUMP
            sqs = boto3.client(
                "sqs",
                endpoint_url=local.env["SQS_ENDPOINT_URL"],
                region_name=local.env["AWS_DEFAULT_REGION"],
                aws_access_key_id=local.env["AWS_ACCESS_KEY_ID"],
                aws_secret_access_key=local.env["AWS_SECRET_ACCESS_KEY"],
            )
            with psycopg.connect(local.env["DATABASE_URL"], autocommit=True) as database:
                yield Fuzzed(local, bearer, redis, database, sqs, written=set(SEEDED))
            redis.close()
        finally:
            local.stop()
            shutil.rmtree(base, ignore_errors=True)


# --- keeping valid cases valid where JSON Schema cannot say it -------------------------------


def _real_period(period: str) -> str:
    """A calendar-valid period id of the same shape (the document's pattern cannot rule out
    2026-02-30 or 2026-W54, which the API refuses with 422 as documented): a valid case then
    reaches the read rather than that refusal."""
    if m := re.fullmatch(r"([0-9]{4})-([0-9]{2})-([0-9]{2})", period):
        year, month = max(1, int(m[1])), min(max(1, int(m[2])), 12)
        day = min(max(1, int(m[3])), calendar.monthrange(year, month)[1])
        return f"{year:04d}-{month:02d}-{day:02d}"
    if m := re.fullmatch(r"([0-9]{4})-W([0-9]{2})", period):
        year = max(1, min(int(m[1]), 9998))
        weeks = date(year, 12, 28).isocalendar().week
        return f"{year:04d}-W{min(max(1, int(m[2])), weeks):02d}"
    if m := re.fullmatch(r"([0-9]{4})-([0-9]{2})", period):
        return f"{max(1, int(m[1])):04d}-{min(max(1, int(m[2])), 12):02d}"
    return period


def _of_kind(period: str, kind: Any) -> str:
    """The period of `kind` (daily, weekly, monthly) that contains the start of `period`."""
    from leaderboard.domain.periods import current_period, parse_period_id

    if kind not in ("daily", "weekly", "monthly"):
        return period
    try:
        start = parse_period_id(period).starts_at
        assert start is not None
        return current_period(kind, start).id
    except Exception:  # the last days of year 9999 have no following period: left as they are
        return period


def _keep_valid(case: Any) -> None:
    """Rules the document states in words only, applied to cases generated as valid: a body's
    `board_id` equals the path's; `offset` and `around_rank` are not given together; a period id
    is a real day, week or month; a history's `before` is a period of its `kind`."""
    if not case.meta or not case.meta.generation.mode.is_positive:
        return
    board = (case.path_parameters or {}).get("board_id")
    if isinstance(case.body, dict) and "board_id" in case.body and isinstance(board, str):
        case.body = {**case.body, "board_id": board}
    query = dict(case.query or {})
    if "offset" in query and "around_rank" in query:
        query.pop("around_rank")
    if isinstance(query.get("period"), str):
        query["period"] = _real_period(query["period"])
    if isinstance(query.get("before"), str):  # a real period of the history's kind
        query["before"] = _of_kind(_real_period(query["before"]), query.get("kind", "weekly"))
    if query != (case.query or {}):
        case.query = query


@SCHEMA.hook
def map_path_parameters(context: Any, path_parameters: dict[str, Any] | None) -> Any:
    """Send two thirds of the well-formed board ids generated to a seeded board and half the
    well-formed player ids to a seeded player (a stable choice, so derandomized runs repeat
    exactly); ill-formed ones stay as they are. The examples and coverage cases use the
    document's own `arena` and `ada`, which are seeded too."""
    if not path_parameters:
        return path_parameters
    params = dict(path_parameters)
    pick = zlib.crc32(json.dumps(params, sort_keys=True, default=str).encode())
    board, player = params.get("board_id"), params.get("player_id")
    if isinstance(board, str) and BOARD_ID.fullmatch(board) and pick % 3:
        params["board_id"] = list(SEEDED)[pick % len(SEEDED)]
    if isinstance(player, str) and PLAYER_ID.fullmatch(player) and pick % 2:
        params["player_id"] = PLAYERS[(pick // 7) % len(PLAYERS)]
    return params


# --- the fuzz --------------------------------------------------------------------------------


def test_the_fingerprint_sees_every_kind_of_change(fuzzed: Fuzzed) -> None:
    """The refused-write check can fail: a change in Redis, in the catalog or in a PostgreSQL
    row of the board shows in its fingerprint (the rate-limit buckets and the live publisher's
    marker do not: they change on reads and refusals by design)."""
    board = "fingerprint-probe"
    url = f"{fuzzed.stack.url}/boards/{board}"
    assert _http(url, "PUT", {}, fuzzed.bearer["admin"])[0] == 201
    body = {"player_id": "p-1", "score": 1, "metadata": {"name": "Probe"}}
    assert _http(url + "/scores", "POST", body, fuzzed.bearer["server"])[0] == 200
    fuzzed.drain()
    first = fuzzed.fingerprint(board)
    ignored = [f"lb:{{{board}}}:rl:p-1", f"lb:{{{board}}}:live"]
    for key in ignored:
        fuzzed.redis.set(key, "1")
    assert fuzzed.fingerprint(board) == first
    fuzzed.redis.delete(*ignored)
    meta, catalog = f"lb:{{{board}}}:meta", "lb:boards"
    kept = {meta: fuzzed.redis.hget(meta, "p-1"), catalog: fuzzed.redis.hget(catalog, board)}
    standings = "UPDATE standings SET score = score + %s WHERE board_id = %s"
    changes = [  # each change, then its undo (GET /boards must go on listing a sound board)
        (
            lambda: fuzzed.redis.hset(meta, "p-1", "{}"),
            lambda: fuzzed.redis.hset(meta, "p-1", kept[meta]),
        ),
        (
            lambda: fuzzed.redis.hset(catalog, board, "{}"),
            lambda: fuzzed.redis.hset(catalog, board, kept[catalog]),
        ),
        (
            lambda: fuzzed.database.execute(standings, (1, board)),
            lambda: fuzzed.database.execute(standings, (-1, board)),
        ),
    ]
    for change, undo in changes:
        change()
        assert fuzzed.fingerprint(board) != first
        undo()
        assert fuzzed.fingerprint(board) == first


# Well-formed requests the API refuses for the state they meet or for rules the document states
# in words: 404 (no such board or player), 409 (a rule that cannot change once the board has
# entries, an idempotency key reused), 422 (every rule the schema cannot state: the board's own,
# a relation between fields, a value of the right shape that names nothing), 429 (its rate
# limit). Never 400: what the schema accepts is not malformed (docs/API.md, "Errors").
ACCEPTED_STATUSES = {200, 201, 204, 401, 403, 404, 409, 422, 429}
# The batch route's items may be any JSON (an item that is not a submission fails alone), so
# the fuzz can reach the strict-JSON rules every body follows (docs/API.md, Conventions).
STRICT_JSON_400 = (
    "number is too large",
    "request body is nested too deeply",
    "strings must not contain U+0000 or unpaired surrogates",
    "duplicate key ",
)


def valid_requests_are_accepted(ctx: Any, response: Any, case: Any) -> None:
    """schemathesis's positive_data_acceptance, with the refusals above allowed: a request
    generated as valid must be accepted or refused for a documented reason."""
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return
    if response.status_code in ACCEPTED_STATUSES:
        return
    if response.status_code == 400 and case.path.endswith("/scores/batch"):
        try:
            message = response.json().get("message")
        except ValueError:
            message = None
        if str(message).startswith(STRICT_JSON_400):
            return
    raise AssertionError(
        f"a request valid by the document was refused with {response.status_code}: "
        f"{response.text[:300]}"
    )


# `unsupported_method` is left out: for a method a path does not have, API Gateway answers 404
# `{"message": "Not Found"}` (no route), not 405, and the local gateway does the same.
CHECKS: dict[str, Any] = {
    "excluded_checks": [unsupported_method, positive_data_acceptance],
    "additional_checks": [valid_requests_are_accepted],
}


def _transport(fuzzed: Fuzzed, who: str) -> dict[str, Any]:
    """How a case is sent: to the stack, with `who`'s token."""
    headers = {"Authorization": f"Bearer {fuzzed.bearer[who]}"}
    return {"base_url": fuzzed.stack.url, "headers": headers, "timeout": 30}


def _validate(case: Any, response: Any, transport: dict[str, Any]) -> None:
    case.validate_response(
        response, headers=transport["headers"], transport_kwargs=transport, **CHECKS
    )


def _call(fuzzed: Fuzzed, case: Any, transport: dict[str, Any]) -> Any:
    """Send `case`; a write refused with a 4xx must leave its board as it was, every Redis key
    and PostgreSQL row of it."""
    _keep_valid(case)
    board = (case.path_parameters or {}).get("board_id")
    writes = case.method.upper() in ("PUT", "POST", "DELETE") and isinstance(board, str)
    if case.path.endswith("/rebuild"):
        fuzzed.drain()  # an admin rebuild reloads from the record: it must be complete
    before = fuzzed.fingerprint(board) if writes else None
    response = case.call(**transport)
    seen = fuzzed.calls.setdefault(case.operation.label, {})
    seen[response.status_code] = seen.get(response.status_code, 0) + 1
    if writes and 400 <= response.status_code < 500:
        after = fuzzed.fingerprint(board)
        assert after == before, (
            f"{case.method} {case.formatted_path} was refused with {response.status_code} "
            f"but changed the board: {_difference(before, after)}\n{case.as_curl_command()}"
        )
    elif writes and response.status_code < 300:
        fuzzed.written.add(board)
    return response


def _difference(before: Any, after: Any) -> str:
    changed = []
    for part in ("redis", "pg"):
        for key in sorted(set(before[part]) | set(after[part])):
            if before[part].get(key) != after[part].get(key):
                changed.append(f"{part}:{key}")
    if before["catalog"] != after["catalog"]:
        changed.append("catalog")
    return ", ".join(changed)


def _fuzz_settings(test: Any) -> Any:
    configured = settings(
        max_examples=EXAMPLES,
        derandomize=not LONG and FUZZ_SEED is None,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )(test)
    return seed(int(FUZZ_SEED))(configured) if FUZZ_SEED is not None else configured


def _coverage_case_for_admin_only(case: Any, who: str) -> bool:
    """In `make test` the coverage phase's cases (each boundary, each constraint broken on its
    own: 3 in 5 of all requests) are sent with the admin token only, which may call every
    route: sent again with the server and player tokens they mostly meet the same validation or
    a 403 the examples and generated cases already show for those tokens. `make fuzz` sends
    them with every token."""
    phase = getattr(getattr(case, "meta", None), "phase", None)
    return not LONG and who != "admin" and getattr(phase, "name", None) == TestPhase.COVERAGE


@pytest.mark.parametrize("who", ["admin", "server", "player"])
@SCHEMA.parametrize()
@_fuzz_settings
def test_every_answer_is_as_documented(case: Any, who: str, fuzzed: Fuzzed) -> None:
    """No 5xx, every answer documented, auth demanded, and a refused write changes nothing."""
    if _coverage_case_for_admin_only(case, who):
        return
    transport = _transport(fuzzed, who)
    _validate(case, _call(fuzzed, case, transport), transport)


@pytest.mark.skipif(not LONG, reason="`make fuzz` only: sequences take minutes to matter")
@pytest.mark.parametrize("who", ["admin", "server"])
def test_sequences_of_calls_hold_to_the_document(who: str, fuzzed: Fuzzed) -> None:
    """schemathesis's stateful mode: chains of calls, each using what an earlier answer named
    (the links it infers from the document: a board created, then scored, read, rebuilt...)."""

    class Sequences(SCHEMA.as_state_machine()):  # type: ignore[misc]
        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return _transport(fuzzed, who)

        def call(self, case: Any, **kwargs: Any) -> Any:
            return _call(fuzzed, case, kwargs)

        def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
            _validate(case, response, kwargs)

    Sequences.run(
        settings=settings(
            max_examples=max(1, EXAMPLES // 10),
            stateful_step_count=10,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
    )


# --- afterwards: the record ------------------------------------------------------------------


def test_what_the_fuzz_wrote_is_stored_and_served_alike(
    fuzzed: Fuzzed, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs after the fuzz (pytest keeps file order). The persister stores everything the
    accepted writes queued, and every board written to serves what PostgreSQL records."""
    env = fuzzed.stack.env
    fuzzed.drain()
    assert _queued(fuzzed.sqs, env["SCORE_QUEUE_URL"]) == 0
    dlq = fuzzed.sqs.get_queue_url(QueueName=DLQ_NAME)["QueueUrl"]
    assert _queued(fuzzed.sqs, dlq) == 0
    client = connect(env["REDIS_URL"])
    try:
        for board_id in sorted(fuzzed.written):
            try:
                assert_redis_equals_postgres(client, env["DATABASE_URL"], board_id)
            except AssertionError as error:
                difference = _board_difference(fuzzed, board_id)
                raise AssertionError(f"{board_id}: {difference}") from error
    finally:
        client.close()
    # The figures, on the terminal even when output is captured: requests and answers per
    # operation show what the run reached (200s and 201s are writes that went through).
    lines = [
        f"fuzz: {sum(sum(s.values()) for s in fuzzed.calls.values())} requests,"
        f" {EXAMPLES} generated per operation and scope besides the examples and coverage cases;"
        f" {fuzzed.stored} submissions stored, {len(fuzzed.written)} boards equal to the record",
        *(
            f"  {label}: " + ", ".join(f"{n} x {s}" for s, n in sorted(statuses.items()))
            for label, statuses in sorted(fuzzed.calls.items())
        ),
    ]
    with capsys.disabled():
        print("\n" + "\n".join(lines))


def _board_difference(fuzzed: Fuzzed, board_id: str) -> str:
    """What a board serves against what PostgreSQL records, for the failure message."""
    prefix = f"lb:{{{board_id}}}:"
    redis_meta = {k.decode(): v.decode() for k, v in fuzzed.redis.hgetall(prefix + "meta").items()}
    rows = fuzzed.database.execute(
        "SELECT player_id, metadata::text, version FROM player_metadata WHERE board_id = %s",
        (board_id,),
    ).fetchall()
    standings = fuzzed.database.execute(
        "SELECT player_id, period, region, score, present, version FROM standings"
        " WHERE board_id = %s ORDER BY 1, 2, 3",
        (board_id,),
    ).fetchall()
    tombstones = fuzzed.database.execute(
        "SELECT player_id, version FROM player_tombstones WHERE board_id = %s", (board_id,)
    ).fetchall()
    config = fuzzed.redis.get(prefix + "cfg")
    return (
        f"config {config!r}\nredis metadata {redis_meta}\npostgres metadata {rows}\n"
        f"standings {standings}\ntombstones {tombstones}"
    )


def _queued(sqs: Any, url: str) -> int:
    attributes = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return sum(int(v) for v in attributes.values())
