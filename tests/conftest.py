"""Real servers for the whole session, one set per pytest-xdist worker: Valkey, PostgreSQL, an
SQS endpoint and the live event API, each started the first time a test asks for it.

With REDIS_URL / DATABASE_URL set, those servers are shared instead, each worker on its own
share: Redis database number n + the URL's, and a PostgreSQL database of its own. Tests never
flush a shared server: every test works on boards of its own (the `board_id` fixture).

Where a new test goes: next to what it guards (README, "Development"). `make test-fast`
(TEST_NO_SERVERS=1) runs only the tests that need no server, and refuses to start one.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from hypothesis import HealthCheck, settings

from devstack import servers, tokens
from devstack.hooks import LOCAL_HOOKS
from devstack.servers import EmbeddedPostgres, EmbeddedValkey, LocalEventApi, LocalSQS
from devstack.webhook_receiver import WEBHOOK_PLACEHOLDER_ENV
from leaderboard.stores.postgres.database import apply_migrations
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.serving_index import RedisIndex
from tests.support import examples, time_report
from tests.support.api import InProcessApi
from tests.support.boards import ListSink, MovableClock
from tests.support.local_stack import RunningStack, Stack

# Examples per property test (tests/support/examples.py; README, "Testing"): `make test` (ci)
# enough to catch a broken rule every run, each run on new examples; `make test-random` (dev)
# twice as many, `make test-deep` (deep) and `make fuzz` (long) many more. The suite must stay
# under 8 minutes: every example of most of these reaches Redis.
for _profile, _count in examples.DEFAULT.items():
    settings.register_profile(
        _profile,
        max_examples=_count,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# A test that asks for one of these (directly or through another fixture) needs a server.
SERVER_FIXTURES = frozenset({"redis_url", "database_url", "sqs", "event_api", "make_run"})
# Markers of tests that start whole stacks or clusters of their own.
SERVER_MARKERS = ("server", "e2e", "cluster")
NO_SERVERS = os.environ.get("TEST_NO_SERVERS") == "1"
# The files that take longest, started first so that no worker is handed a long one at the end
# while the others sit idle. Refresh the list from `make test PYTEST_ARGS=--durations=30`.
SLOW_FIRST = (  # longest first: seconds on their worker in fresh-clone runs, 2026-11-28
    # mostly waiting for its windows' real-time boundaries (0.4 CPU-s): first, beside CPU work
    "e2e/test_docs_client_recurring_tournaments.py",  # 59
    "chaos/test_chaos_smoke.py",  # 86-91
    "devstack/test_sam_local_invoke.py",  # 74-83 (mostly waiting on Docker)
    "e2e/test_fuzz.py",  # 71-83
    "stores/redis/sharded/test_sharded_index.py",  # 55-63
    "e2e/test_demo_page.py",  # 56-62
    "e2e/test_e2e_local_stack.py",  # 58-63
    "services/test_live_publisher.py",  # 53
    "clients/test_js_client.py",  # 46-53 (the worker's make run, then node --test)
    "devstack/test_sam_local_emulation.py",  # 43-49 (another worker than the native one)
    "e2e/test_cluster_stack.py",  # 39-41
    "console/test_console.py",  # 38-40 on its own (a stack, 5,000 entries, Chromium)
    "chaos/test_chaos_cluster.py",  # 27-40
    "e2e/test_docs_client_player_channels.py",  # 28-35
    "benchmarks/test_bench_player_channels_smoke.py",  # 30
    "benchmarks/test_bench_live_smoke.py",  # 28-33
    "benchmarks/test_bench_http_smoke.py",  # 26-32
    "benchmarks/test_bench_persister_coldstart_smoke.py",  # 27-28
    "e2e/test_docs_client_leagues.py",  # about 25 on a shared stack
    "functions/test_bad_input.py",  # 26
    "clients/test_python_client.py",
    "services/test_reference_model.py",
    "deploy/test_template.py",
    "stores/redis/test_cluster.py",
    "test_conftest.py",
    "services/test_reference_model_tiebreakers.py",
    "e2e/test_validation_hooks_stack.py",
    "services/test_validation_hooks.py",
    "stores/redis/sharded/test_sharded_tiebreakers.py",
)


def worker_number() -> int:
    """0 for gw0 (and without xdist), 1 for gw1, ..."""
    return int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)


def pytest_configure(config: pytest.Config) -> None:
    time_report.register(config)  # the slowest files and set-ups, and the budget, at the end


# Test folders whose code under test runs in other processes: the local stacks' function
# workers, `make run`, Docker, browsers, Node. Coverage measures only this process, so it has
# nothing of the service to record there, yet its tracer made the fuzz alone cost 18 s more
# CPU (46 s without it, 64 s with); it is paused for their tests (README, Testing).
OUT_OF_PROCESS_FOLDERS = frozenset({"e2e", "chaos", "clients", "devstack", "console"})


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    tests = Path(__file__).parent
    inside = Path(item.path).is_relative_to(tests)  # a test pytester writes elsewhere is not
    folder = Path(item.path).relative_to(tests).parts[0] if inside else ""
    tracer = _coverage() if folder in OUT_OF_PROCESS_FOLDERS else None
    if tracer is None:
        return (yield)
    tracer.stop()
    try:
        return (yield)
    finally:
        tracer.start()


def _coverage() -> Any:
    """The coverage measurement of this process, if one runs (make test's `--cov`)."""
    try:
        import coverage
    except ImportError:
        return None
    return coverage.Coverage.current()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = Path(__file__).parent
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)  # make test-deep runs these, at length
        if set(item.fixturenames) & SERVER_FIXTURES or any(
            item.get_closest_marker(name) for name in SERVER_MARKERS
        ):
            item.add_marker(pytest.mark.server)
    if config.pluginmanager.hasplugin("randomly") and config.getoption("randomly_reorganize"):
        return  # make test-random: pytest-randomly's order, nothing first

    def rank(item: pytest.Item) -> int:
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else ""
        return SLOW_FIRST.index(where) if where in SLOW_FIRST else len(SLOW_FIRST)

    items.sort(key=rank)  # stable: within a rank, the files and tests keep their order


@pytest.fixture(scope="session", autouse=True)
def _servers_only_where_allowed() -> Iterator[None]:
    """Under `make test-fast`, starting any server (an embedded Valkey or PostgreSQL, the SQS
    endpoint, the event API) fails the test: it belongs to `make test`, marked `server`."""
    if not NO_SERVERS:
        yield
        return
    spawn = servers.process._spawn

    def refuse(argv: list[str], **kwargs: Any) -> Any:
        raise AssertionError(
            f"make test-fast starts no server, but this test started {argv[0]!r}: "
            "mark it `server` (or use a server fixture) so only `make test` runs it"
        )

    servers.process._spawn = refuse  # type: ignore[assignment]
    try:
        yield
    finally:
        servers.process._spawn = spawn  # type: ignore[assignment]


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    shared = os.environ.get("REDIS_URL")
    if shared:
        parts = urlsplit(shared)
        db = int(parts.path.strip("/") or 0) + worker_number()
        if db > 15:
            pytest.fail(f"REDIS_URL: worker {worker_number()} would need database {db} (0-15)")
        yield urlunsplit(parts._replace(path=f"/{db}"))
        return
    with EmbeddedValkey(tmp_path_factory.mktemp("valkey")) as server:
        yield server.url


@pytest.fixture(scope="session")
def database_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    shared = os.environ.get("DATABASE_URL")
    if shared:
        # A database of this worker's own on the shared server, new each session.
        parts = urlsplit(shared)
        name = f"{parts.path.strip('/') or 'postgres'}_test_gw{worker_number()}"
        with psycopg.connect(shared, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        url = urlunsplit(parts._replace(path=f"/{name}"))
        apply_migrations(url)
        yield url
        with psycopg.connect(shared, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
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


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock(datetime(2026, 11, 22, 12, 0, tzinfo=UTC))


@pytest.fixture
def sink() -> ListSink:
    return ListSink()


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
            # the functions' credentials: the event API takes publishes signed with these
            "AWS_ACCESS_KEY_ID": event_api.publisher_credentials[0],
            "AWS_SECRET_ACCESS_KEY": event_api.publisher_credentials[1],
            "POWERTOOLS_TRACE_DISABLED": "true",
            # the example validation hooks, as `make run` configures them
            "LOCAL_VALIDATION_HOOKS": LOCAL_HOOKS,
            # the read function checks a token sent with a read as the gateway checks others
            "JWT_SECRET": InProcessApi.SECRET,
            "JWT_ISSUER": tokens.issuer(),
            "JWT_AUDIENCE": tokens.audience(),
            # the webhook delivery's configuration (loaded with the others, never called here)
            **WEBHOOK_PLACEHOLDER_ENV,
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


@pytest.fixture(scope="session")
def make_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningStack]:
    """`make run`, started as a newcomer starts it (its own embedded servers), once per worker
    for every test file that needs only a running stack; stopped as Ctrl-C stops it."""
    base = tmp_path_factory.mktemp("make-run")
    base.chmod(0o755)  # the embedded PostgreSQL's user must reach it when running as root
    # The schedules ten times as often (README: LOCAL_SCHEDULE_SCALE), so a test waits seconds,
    # not a minute, for the rollover's run; webhook retries come quickly too.
    stack = Stack(
        base / "data", env={"LOCAL_SCHEDULE_SCALE": "0.1", "WEBHOOK_RETRY_BASE_SECONDS": "1"}
    )
    try:
        yield RunningStack(stack)
    finally:
        stack.stop()
