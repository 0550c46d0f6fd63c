"""Real servers for the whole session: Valkey, PostgreSQL and an SQS endpoint.

With REDIS_URL / DATABASE_URL set, those servers are used instead of embedded ones. Tests never
flush a shared server: every test works on boards of its own (the `board_id` fixture).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from devstack.servers import EmbeddedPostgres, EmbeddedValkey, LocalEventApi, LocalSQS
from leaderboard.domain.boards import parse_board_request
from leaderboard.stores.postgres import apply_migrations
from leaderboard.stores.redis_client import connect
from leaderboard.stores.redis_index import RedisIndex

settings.register_profile(
    "ci", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "dev", max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("REDIS_URL"):
        yield os.environ["REDIS_URL"]
        return
    with EmbeddedValkey(tmp_path_factory.mktemp("valkey")) as server:
        yield server.url


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("DATABASE_URL"):
        url = os.environ["DATABASE_URL"]
        apply_migrations(url)
        yield url
        return
    with EmbeddedPostgres() as server:  # its own temp dir, reachable by the postgres user
        url = server.create_database("leaderboard_test")
        apply_migrations(url)
        yield url


@pytest.fixture(scope="session")
def sqs() -> Iterator[LocalSQS]:
    with LocalSQS() as server:
        yield server


@pytest.fixture(scope="session")
def queue_url(sqs: LocalSQS) -> str:
    return sqs.create_queue("test-scores", dlq_name="test-scores-dlq", max_receive_count=3)


@pytest.fixture
def redis_client(redis_url: str) -> Iterator[Any]:
    client = connect(redis_url)
    yield client
    client.close()


@pytest.fixture
def index(redis_client: Any) -> RedisIndex:
    return RedisIndex(redis_client)


@pytest.fixture
def board_id() -> str:
    return f"t-{uuid.uuid4().hex[:16]}"


class MovableClock:
    """A clock tests move by hand."""

    def __init__(self, start: datetime) -> None:
        self.now = start

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock(datetime(2026, 11, 22, 12, 0, tzinfo=UTC))


class ListSink:
    """Collects events instead of sending them (for tests of the Redis side only)."""

    def __init__(self) -> None:
        self.events: list[Any] = []

    def send(self, event: Any) -> None:
        self.events.append(event)


@pytest.fixture
def sink() -> ListSink:
    return ListSink()


def publish(index: RedisIndex, board_id: str, **rules: Any) -> Any:
    board = parse_board_request(
        board_id, rules, None, has_entries=False, now_iso="2026-11-22T00:00:00Z"
    )
    index.publish_board(board)
    return board


class InProcessApi:
    """The API exactly as the local gateway serves it (template routes, JWT authorizer,
    payload-2.0 events), with the handlers called in this process."""

    SECRET = "test-secret-not-used-anywhere-else"

    def __init__(self, local_env: dict[str, str]) -> None:
        from devstack.gateway import LocalApi
        from devstack.runtime import load_handler, make_context
        from devstack.template import load

        template = load()
        for spec in template.functions.values():
            os.environ.update(spec.resolved_environment(local_env))
        handlers = {name: load_handler(spec) for name, spec in template.functions.items()}
        self.template = template

        def invoke(function: str, event: dict[str, Any]) -> Any:
            return handlers[function](event, make_context(template.functions[function]))

        self.api = LocalApi(template, invoke, self.SECRET)

    def token(self, sub: str, scopes: str = "") -> str:
        from devstack import tokens

        return tokens.mint(self.SECRET, sub, scopes)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        contract: bool = True,
    ) -> Any:
        """The gateway's reply; unless `contract` is False, a reply docs/openapi.json does not
        describe (status, headers, body) fails the calling test (tests/openapi_contract.py)."""
        import json as _json

        from tests.openapi_contract import check_reply

        sent = dict(headers or {})
        if token:
            sent["authorization"] = f"Bearer {token}"
        payload = raw if raw is not None else (b"" if body is None else _json.dumps(body).encode())
        if payload:
            sent.setdefault("content-type", "application/json")
        reply = self.api.handle(method, path, sent, payload)
        if contract:
            check_reply(self.template, method, path, reply)
        return reply


@pytest.fixture(scope="session")
def event_api() -> Iterator[LocalEventApi]:
    """The local AppSync Events stand-in: WebSocket subscribers, HTTP publishes."""
    with LocalEventApi() as server:
        yield server


@pytest.fixture(scope="session")
def api(
    redis_url: str, database_url: str, sqs: LocalSQS, queue_url: str, event_api: LocalEventApi
) -> InProcessApi:
    return InProcessApi(
        {
            "REDIS_URL": redis_url,
            "REDIS_CLUSTER": "false",
            "DATABASE_URL": database_url,
            "SCORE_QUEUE_URL": queue_url,
            "SQS_ENDPOINT_URL": sqs.endpoint_url,
            "LIVE_EVENTS_URL": event_api.publish_url,
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
    )


@pytest.fixture(scope="session")
def admin_token(api: InProcessApi) -> str:
    return api.token("admin", "leaderboard/admin")


@pytest.fixture(scope="session")
def server_token(api: InProcessApi) -> str:
    return api.token("game-server", "leaderboard/server")


@pytest.fixture(scope="session")
def session_index(redis_url: str) -> Iterator[RedisIndex]:
    """One index for tests that run many examples (hypothesis); each example uses new boards."""
    client = connect(redis_url)
    yield RedisIndex(client)
    client.close()


def drain_queue(sqs: LocalSQS, queue_url: str, invoke: Any) -> int:
    """Deliver everything in the queue to the persister the way the event source would."""
    from devstack.queue_consumer import sqs_record

    client = sqs.client()
    arn = client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    delivered = 0
    while True:
        messages = client.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return delivered
        response = invoke({"Records": [sqs_record(m, arn, "us-east-1") for m in messages]})
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        for message in messages:
            if message["MessageId"] not in failed:
                client.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
                delivered += 1
