"""`sam local invoke` for real (issue 14): every function of template.yaml, built by `sam build`,
run by SAM CLI in a Docker container of the python3.13 image built here (no registry), against
a running local stack, each response and side effect checked. Natively here; the deployed
architecture (arm64) under emulation is in test_sam_local_emulation.py, on a worker of its own.

Where Docker cannot run Lambda containers at all, the test is skipped with the reason; on CI
(root, OS packages reachable) the engine, qemu and debootstrap are installed and a failure to
get them is a failure, not a skip.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest

from devstack import sam_local
from devstack.template import ROOT
from tests.support.local_stack import RunningStack, Stack
from tests.support.sam_builds import shared_build
from tests.support.sam_local import require_engine, run_sam

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


NATIVE = sam_local.native_arch()


@pytest.fixture(scope="module")
def image() -> str:
    require_engine(NATIVE)
    return sam_local.build_image(NATIVE)


@pytest.fixture(scope="module")
def built(image: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return shared_build(tmp_path_factory, NATIVE)


@pytest.fixture(scope="module")
def stack(image: str, make_run: RunningStack) -> Stack:
    """The worker's `make run`: the containers reach its stores and event API."""
    return make_run.stack


def _next_monday(now: datetime) -> datetime:
    days = 7 - now.weekday()
    return (now + timedelta(days=days)).replace(hour=0, minute=5, second=0, microsecond=0)


def test_every_function_runs_in_a_container_through_sam_local_invoke(
    image: str, built: Path, stack: Stack, tmp_path: Path
) -> None:
    images = sam_local.function_images(built, NATIVE)
    template = sam_local.invocation_template(built, NATIVE)
    state = json.loads((stack.data_dir / "stack.json").read_text())
    host = sam_local.docker_host_address()
    env_file = sam_local.write_env_vars(state["env"], tmp_path / "env.json", host)
    database_url = state["env"]["DATABASE_URL"]
    now = datetime.now(UTC)
    week = f"{now.isocalendar().year}-W{now.isocalendar().week:02d}"
    # The sample rollover event names a fixed instant; this one closes the current week, so
    # the run has a period with entries to archive.
    rollover_event = tmp_path / "rollover_now.json"
    at = _next_monday(now).isoformat().replace("+00:00", "Z")
    rollover_event.write_text(json.dumps({"kinds": ["weekly"], "boards": ["demo-arena"], "at": at}))

    def scalar(sql: str, *params: Any) -> Any:
        with psycopg.connect(database_url) as conn:
            row = conn.execute(sql, params).fetchone()
        return None if row is None else row[0]

    def body(result: dict[str, Any]) -> Any:
        return json.loads(result["body"])

    def read_ada() -> Any:
        status, _, reply = stack.request("GET", "/boards/demo-arena/players/ada")
        return status, json.loads(reply)

    # (function, event, check of the response, check of the side effect), in an order that
    # makes each meaningful: the board exists before the score, the score before the rollover.
    plan: list[tuple[str, Path, Callable[[Any], bool], Callable[[], bool]]] = [
        (
            "MigrationsFunction",
            ROOT / "events/migrations_create.json",
            lambda r: r["Status"] == "SUCCESS",
            lambda: scalar("SELECT count(*) FROM schema_migrations") >= 6,
        ),
        (
            "ApiAdminFunction",
            ROOT / "events/api_admin_put_board.json",
            lambda r: r["statusCode"] == 201 and body(r)["board_id"] == "demo-arena",
            lambda: scalar("SELECT version FROM boards WHERE board_id = 'demo-arena'") == 1,
        ),
        (
            "ApiWriteFunction",
            ROOT / "events/api_write_submit_score.json",
            lambda r: r["statusCode"] == 200 and body(r)["applied"] is True,
            lambda: read_ada()[0] == 200 and read_ada()[1]["score"] == 1250,
        ),
        (
            "ApiReadFunction",
            ROOT / "events/api_read_players.json",
            lambda r: (
                r["statusCode"] == 200
                and [e["player_id"] for e in body(r)["entries"]] == ["ada"]
                and body(r)["missing"] == ["bob", "cy"]
            ),
            lambda: True,  # a read: its answer is the check
        ),
        (
            "PersisterFunction",
            ROOT / "events/persister_sqs_batch.json",
            lambda r: r == {"batchItemFailures": []},
            lambda: (
                scalar(
                    "SELECT count(*) FROM score_events WHERE event_id = %s",
                    "6f1c2f8e-2b8e-4a43-9a59-3c2b1e7d0a11",
                )
                == 1
            ),
        ),
        (  # signed and posted to the stack's receiver (WEBHOOK_URL), from the container
            "WebhookDeliveryFunction",
            ROOT / "events/webhook_delivery.json",
            lambda r: r == {"batchItemFailures": []},
            lambda: True,  # the receiver answered 2xx: the function's answer is the check
        ),
        (
            "OutboxRelayFunction",
            ROOT / "events/outbox_relay_scheduled.json",
            lambda r: r["boards"] >= 1,
            lambda: True,
        ),
        (
            "RolloverFunction",
            rollover_event,
            lambda r: r["complete"] is True and f"demo-arena/{week}" in r["archived"],
            lambda: (
                scalar(
                    "SELECT status FROM archived_periods WHERE board_id = 'demo-arena'"
                    " AND period = %s",
                    week,
                )
                == "archived"
            ),
        ),
        (
            "LivePublisherFunction",
            ROOT / "events/live_publisher_scheduled.json",
            lambda r: r["ticks"] >= 1 and r["failed"] == 0,
            lambda: True,
        ),
        (  # a token no key of the stack's signed: refused, and the refusal not cached
            "PlayerChannelAuthorizerFunction",
            ROOT / "events/live_authorizer_subscribe.json",
            lambda r: r == {"isAuthorized": False, "ttlOverride": 0},
            lambda: True,
        ),
    ]
    template_functions = set(json.loads(env_file.read_text()))
    assert {function for function, *_ in plan} == template_functions, "a function not invoked"

    timings: dict[str, float] = {}

    def run(step: tuple[str, Path, Callable[[Any], bool], Callable[[], bool]]) -> None:
        function, event, answered, happened = step
        started = time.monotonic()
        proc = run_sam(
            sam_local.invoke_command(
                function, event, template=template, env_file=env_file, image=images[function]
            ),
            state["env"],
        )
        timings[function] = round(time.monotonic() - started, 1)
        assert proc.returncode == 0, (function, proc.stderr[-3000:])
        result = sam_local.parse_output(proc.stdout)
        assert answered(result), (function, result, proc.stderr[-2000:])
        assert happened(), (function, "side effect missing", proc.stderr[-2000:])

    # One at a time: SAM builds each image's emulator layer at its first use, and two
    # invocations starting together on a new image race (the second finds no image and fails).
    with sam_local.LoopbackForwarder(host, sam_local.store_ports(state["env"])):
        for step in plan:
            run(step)
    print(f"sam local invoke ({NATIVE}), seconds per function:", timings)


def test_the_env_vars_file_points_every_function_at_the_stack_as_containers_see_it() -> None:
    """No Docker needed: the file SAM gets names every function, rewrites the stack's loopback
    URLs (user@host forms included) to the address containers reach, and only uses variables
    the template declares (SAM drops the others)."""
    from devstack.template import LOCAL_ONLY_VARIABLES, load

    stack_env = {
        "REDIS_URL": "redis://127.0.0.1:6390/0",
        "REDIS_CLUSTER": "false",
        "DATABASE_URL": "postgresql://postgres@127.0.0.1:5999/leaderboard",
        "SQS_ENDPOINT_URL": "http://127.0.0.1:4100",
        "SCORE_QUEUE_URL": "http://127.0.0.1:4100/123456789012/leaderboard-scores",
    }
    files = sam_local.env_vars(stack_env, "172.17.0.1")
    functions = load().functions
    assert set(files) == set(functions)
    for name, variables in files.items():
        assert set(variables) <= set(functions[name].environment) | set(LOCAL_ONLY_VARIABLES), name
        assert variables["DATABASE_URL"] == "postgresql://postgres@172.17.0.1:5999/leaderboard"
        assert variables["REDIS_URL"] == "redis://172.17.0.1:6390/0"
        assert variables["SQS_ENDPOINT_URL"] == "http://172.17.0.1:4100"
        assert "127.0.0.1" not in json.dumps(variables), name
    assert {"DATABASE_URL", "SQS_ENDPOINT_URL"} <= set(functions["ApiReadFunction"].environment)
    assert sam_local.store_ports(stack_env) == [4100, 5999, 6390]
