"""The whole system on one machine: real Valkey and PostgreSQL (embedded unless REDIS_URL /
DATABASE_URL point elsewhere), moto's SQS in a process of its own, the functions of
template.yaml in Lambda-like workers, and the API on http://127.0.0.1:3000.

The gateway and the function pools share one asyncio loop in a thread of their own (uvloop
when it is installed); the queue consumer and the scheduler are threads that call into it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import secrets
import threading
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from devstack import tokens
from devstack.event_bus import LocalEventBus
from devstack.gateway import HttpGateway, LocalApi
from devstack.hooks import LOCAL_HOOKS
from devstack.queue_consumer import QueueConsumer
from devstack.runtime import EventLoopThread, FunctionPool, Invocation
from devstack.scheduler import Scheduler
from devstack.servers import (
    EmbeddedPostgres,
    EmbeddedValkey,
    EmbeddedValkeyCluster,
    LocalEventApi,
    LocalSQS,
    free_port,
    postgres_data_dir,
    reserve_port,
)
from devstack.template import Template, default_data_dir, load
from devstack.webhook_receiver import PATH as WEBHOOK_PATH
from devstack.webhook_receiver import WebhookReceiver

log = logging.getLogger("devstack")
QUEUE_NAME = "leaderboard-scores"
DLQ_NAME = "leaderboard-scores-dlq"
WEBHOOK_QUEUE_NAME = "leaderboard-webhooks"
WEBHOOK_DLQ_NAME = "leaderboard-webhooks-dlq"
EVENT_BUS_NAME = "leaderboard-local-events"
STATE_FILE = "stack.json"
# Functions whose scheduled run is a long loop (about a minute) that hands over to the next run:
# started at once (clients expect live updates from the first second) and never waited for.
LOOPING_SCHEDULES = {"LivePublisherFunction"}


@dataclass
class StackConfig:
    data_dir: Path = field(default_factory=default_data_dir)
    host: str = "127.0.0.1"
    port: int = field(default_factory=lambda: int(os.environ.get("PORT", "3000")))
    concurrency: int = field(default_factory=lambda: local_concurrency())
    # The live updates' WebSocket and publish ports: 3001 and 3002 next to the API's default
    # 3000, free ones otherwise (tests), unless LIVE_WS_PORT / LIVE_HTTP_PORT say.
    live_ws_port: int | None = None
    live_http_port: int | None = None

    def live_ports(self) -> tuple[int | None, int | None]:
        def pick(given: int | None, name: str, beside_default: int) -> int | None:
            if given is not None:
                return given or None
            if os.environ.get(name):
                return int(os.environ[name])
            return beside_default if self.port == 3000 else None

        return (
            pick(self.live_ws_port, "LIVE_WS_PORT", 3001),
            pick(self.live_http_port, "LIVE_HTTP_PORT", 3002),
        )


def local_concurrency() -> int:
    """LOCAL_CONCURRENCY, else two workers per function: on a 2-core laptop more only adds
    context switches (docs/local-performance.md has the measurements)."""
    raw = os.environ.get("LOCAL_CONCURRENCY", "2")
    if not raw.isdigit() or not 1 <= int(raw) <= 64:
        raise SystemExit(f"LOCAL_CONCURRENCY must be a whole number from 1 to 64, not {raw!r}")
    return int(raw)


def _new_loop_thread() -> EventLoopThread:
    """The loop that serves HTTP and talks to the workers: uvloop's when it is installed."""
    try:
        import uvloop
    except ImportError:
        return EventLoopThread("gateway")
    return EventLoopThread("gateway", uvloop.new_event_loop())


def _redrive(template: Template, queue: str = "ScoreQueue") -> tuple[int, int]:
    """A queue's visibility timeout and redrive limit, as template.yaml declares them."""
    props = template.raw["Resources"][queue]["Properties"]
    return int(props.get("VisibilityTimeout", 30)), int(props["RedrivePolicy"]["maxReceiveCount"])


def webhook_secret(data_dir: Path) -> str:
    """WEBHOOK_SECRET, or a random one kept in the local data folder (like the JWT secret), so
    a receiver of your own can keep verifying across restarts."""
    return tokens.kept_secret("WEBHOOK_SECRET", data_dir / "webhook-secret")


class LocalStack:
    def __init__(self, config: StackConfig | None = None) -> None:
        self.config = config or StackConfig()
        self.template = load()
        self.env: dict[str, str] = {}
        self.pools: dict[str, FunctionPool] = {}
        self.gateway: HttpGateway | None = None
        self._address: tuple[str, int] | None = None
        self._loop: EventLoopThread | None = None
        self._resources = ExitStack()
        self.consumers: list[QueueConsumer] = []
        self.scheduler = Scheduler()
        self.events: LocalEventApi | None = None
        self.bus: LocalEventBus | None = None
        self.webhooks: WebhookReceiver | None = None
        # Known before the functions start: the default WEBHOOK_URL is this gateway's.
        self.port = self.config.port or free_port()
        self.queue_urls: dict[str, str] = {}

    @property
    def url(self) -> str:
        assert self._address is not None
        host, port = self._address
        return f"http://{host!s}:{port}"

    @property
    def state_path(self) -> Path:
        return self.config.data_dir / STATE_FILE

    def start(self) -> None:
        data = self.config.data_dir
        data.mkdir(parents=True, exist_ok=True)
        reserve_port(self.config.port)  # bound last: no store or event API may take it first
        try:
            self._start_stores(data)
            self._loop = _new_loop_thread()
            self._start_functions()
            self._start_consumers()
            self._start_schedules()
            api = LocalApi(
                self.template,
                self.invoke,
                tokens.local_secret(data),
                self.ainvoke,
                live=self.live_config(),
                webhooks=self.webhooks,
            )
            self.gateway = HttpGateway(api)
            self._address = asyncio.run_coroutine_threadsafe(
                self.gateway.start(self.config.host, self.port), self._loop.loop
            ).result()
            self.state_path.write_text(
                json.dumps({"url": self.url, "live": self.live_config(), "env": self.env}, indent=2)
            )
        except BaseException:
            self.stop()
            raise

    def _start_stores(self, data: Path) -> None:
        redis_url = os.environ.get("REDIS_URL")
        from leaderboard.settings import env_flag

        cluster = env_flag("REDIS_CLUSTER")
        # The local cluster has a replica per master: a write is acknowledged once one has it
        # (as the template's cluster mode does). A given Redis: as REDIS_REPLICA_ACKS says.
        replica_acks = os.environ.get("REDIS_REPLICA_ACKS") or (
            "1" if cluster and not redis_url else "0"
        )
        if not redis_url and cluster:
            # Nothing of it is kept on disk: the boards are rebuilt from PostgreSQL below.
            nodes = EmbeddedValkeyCluster(masters=3, replicas=1)
            self._resources.enter_context(nodes)
            redis_url = nodes.url
            log.info(
                "embedded Valkey cluster: 3 masters with a replica each, on ports %s",
                ", ".join(str(port) for _, port in nodes.startup_nodes),
            )
        elif not redis_url:
            valkey = EmbeddedValkey(data / "valkey", persist=True)
            self._resources.enter_context(valkey)
            redis_url = valkey.url
            log.info("embedded Valkey on %s (data in %s)", redis_url, data / "valkey")
        database_url = os.environ.get("DATABASE_URL")
        if not database_url:
            pg_dir = postgres_data_dir(data / "postgres")
            postgres = EmbeddedPostgres(pg_dir, persist=True)
            self._resources.enter_context(postgres)
            database_url = postgres.create_database("leaderboard")
            log.info("embedded PostgreSQL on port %s (data in %s)", postgres.port, pg_dir)
        endpoint = os.environ.get("SQS_ENDPOINT_URL")
        aws = {
            "AWS_DEFAULT_REGION": os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
            # The functions' credentials: new ones each start unless given. The local SQS
            # accepts any; the local event API takes publishes signed with these only.
            "AWS_ACCESS_KEY_ID": os.environ.get(
                "AWS_ACCESS_KEY_ID", f"LOCAL{secrets.token_hex(8).upper()}"
            ),
            "AWS_SECRET_ACCESS_KEY": os.environ.get(
                "AWS_SECRET_ACCESS_KEY", secrets.token_urlsafe(30)
            ),
        }
        visibility, max_receive = _redrive(self.template)
        if not endpoint:
            sqs = LocalSQS()
            self._resources.enter_context(sqs)
            endpoint = sqs.endpoint_url
            queue_url = sqs.create_queue(
                QUEUE_NAME,
                dlq_name=DLQ_NAME,
                max_receive_count=max_receive,
                visibility_timeout=visibility,
            )
        else:
            queue_url = _ensure_queue(endpoint, aws, visibility, max_receive)
        hook_visibility, hook_receives = _redrive(self.template, "WebhookQueue")
        webhook_queue = _ensure_queue(
            endpoint, aws, hook_visibility, hook_receives, WEBHOOK_QUEUE_NAME, WEBHOOK_DLQ_NAME
        )
        webhook_dlq = webhook_queue.rsplit("/", 1)[0] + f"/{WEBHOOK_DLQ_NAME}"
        self.queue_urls = {"ScoreQueue": queue_url, "WebhookQueue": webhook_queue}
        self._start_bus(endpoint, aws, webhook_queue)
        secret = webhook_secret(data)
        self.webhooks = WebhookReceiver(secret.encode())
        webhook_url = os.environ.get("WEBHOOK_URL") or (
            f"http://{self.config.host}:{self.port}{WEBHOOK_PATH}"
        )
        log.info(
            "period.ended: bus %s on %s, webhooks to %s (GET /local/webhook-events lists them)",
            EVENT_BUS_NAME,
            self.bus.endpoint_url if self.bus else "-",
            webhook_url,
        )
        ws_port, http_port = self.config.live_ports()
        self.events = LocalEventApi(
            http_port,
            ws_port,
            publisher_credentials=(aws["AWS_ACCESS_KEY_ID"], aws["AWS_SECRET_ACCESS_KEY"]),
            token_env={
                "JWT_SECRET": tokens.local_secret(data),
                "JWT_ISSUER": tokens.issuer(),
                "JWT_AUDIENCE": tokens.audience(),
            },
        )
        self._resources.enter_context(self.events)
        log.info(
            "live updates: subscribe at %s, published to %s",
            self.events.realtime_url,
            self.events.publish_url,
        )
        from leaderboard.stores.postgres.database import apply_migrations

        apply_migrations(database_url)
        self.env = {
            "REDIS_URL": redis_url,
            "REDIS_CLUSTER": "true" if cluster else "false",
            "REDIS_REPLICA_ACKS": replica_acks,
            "DATABASE_URL": database_url,
            "SCORE_QUEUE_URL": queue_url,
            "SQS_ENDPOINT_URL": endpoint,
            "LIVE_EVENTS_URL": self.events.publish_url,
            "POWERTOOLS_TRACE_DISABLED": "true",
            # The read function checks a token sent with a read itself, as the gateway checks
            # the other routes' tokens: HS256 with the local secret (leaderboard/api/bearer.py).
            "JWT_SECRET": tokens.local_secret(data),
            "JWT_ISSUER": tokens.issuer(),
            "JWT_AUDIENCE": tokens.audience(),
            # Boards may name the example hooks of devstack/hooks.py (or the environment's).
            "LOCAL_VALIDATION_HOOKS": os.environ.get("LOCAL_VALIDATION_HOOKS", LOCAL_HOOKS),
            # period.ended: the rollover's bus, the webhook delivery's receiver and queues.
            "EVENT_BUS_NAME": EVENT_BUS_NAME,
            "EVENTS_ENDPOINT_URL": self.bus.endpoint_url if self.bus else "",
            "WEBHOOK_URL": webhook_url,
            "WEBHOOK_SECRET": secret,
            "WEBHOOK_QUEUE_URL": webhook_queue,
            "WEBHOOK_DLQ_URL": webhook_dlq,
            **(
                {"WEBHOOK_RETRY_BASE_SECONDS": os.environ["WEBHOOK_RETRY_BASE_SECONDS"]}
                if os.environ.get("WEBHOOK_RETRY_BASE_SECONDS")
                else {}
            ),
            **aws,
        }
        self._publish_boards()

    def _start_bus(self, endpoint: str, aws: dict[str, str], webhook_queue: str) -> None:
        """The bus stand-in, forwarding period.ended to the webhook queue as the rule does."""
        import boto3

        client = boto3.client(
            "sqs",
            endpoint_url=endpoint,
            region_name=aws["AWS_DEFAULT_REGION"],
            aws_access_key_id=aws["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=aws["AWS_SECRET_ACCESS_KEY"],
        )

        def forward(body: str) -> None:
            client.send_message(QueueUrl=webhook_queue, MessageBody=body)

        self.bus = LocalEventBus(EVENT_BUS_NAME, forward=forward, host=self.config.host)
        self._resources.enter_context(self.bus)

    def live_config(self) -> dict[str, str] | None:
        """What a WebSocket client needs (the demo page gets it in a meta tag)."""
        if self.events is None:
            return None
        publisher = self.template.functions["LivePublisherFunction"]
        rate = publisher.resolved_environment(self.env).get("LIVE_PUBLISH_RATE") or "4"
        return {
            "realtime_url": self.events.realtime_url,
            "http_host": self.events.publish_url.split("/")[2],
            "api_key": self.events.api_key,
            "namespace": "leaderboards",
            "publish_rate": str(rate),
        }

    def _publish_boards(self) -> None:
        """The index may have restarted empty: rebuild what it lost from PostgreSQL."""
        from leaderboard.services.boards import BoardAdminService
        from leaderboard.stores.postgres.database import Database
        from leaderboard.stores.redis.client import connect
        from leaderboard.stores.redis.serving_index import RedisIndex

        db = Database(self.env["DATABASE_URL"])
        client = connect(self.env["REDIS_URL"], cluster=self.env["REDIS_CLUSTER"] == "true")
        try:
            lost = BoardAdminService(db, RedisIndex(client)).recover_lost()
            if lost:
                log.info(
                    "rebuilt %d board(s) the serving index had lost: %s", len(lost), ", ".join(lost)
                )
        finally:
            db.close()
            client.close()

    def _start_functions(self) -> None:
        assert self._loop is not None
        for name, spec in self.template.functions.items():
            env = spec.resolved_environment(self.env)
            self.pools[name] = FunctionPool(spec, env, self.config.concurrency, self._loop.loop)
        # A function nothing here triggers (the migrations, run by the deploy; the channel
        # authorizer, AppSync's) starts its worker on its first `make invoke`, not with the stack.
        triggered = [p for name, p in self.pools.items() if self.template.functions[name].events]
        threads = [threading.Thread(target=p.warm) for p in triggered]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _start_consumers(self) -> None:
        """Wire each SQS event source of the template to its function, with its batch rules."""
        import boto3

        client = boto3.client(
            "sqs",
            endpoint_url=self.env["SQS_ENDPOINT_URL"],
            region_name=self.env["AWS_DEFAULT_REGION"],
            aws_access_key_id=self.env["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.env["AWS_SECRET_ACCESS_KEY"],
        )
        for name, spec in self.template.functions.items():
            for event in spec.events.values():
                if event.get("Type") != "SQS":
                    continue
                props = event["Properties"]
                queue = props["Queue"]["Fn::GetAtt"]
                queue = (queue.split(".") if isinstance(queue, str) else queue)[0]
                consumer = QueueConsumer(
                    client,
                    self.queue_urls[queue],
                    functools.partial(self.invoke, name),
                    batch_size=int(props.get("BatchSize", 10)),
                    window_seconds=float(props.get("MaximumBatchingWindowInSeconds", 0)),
                    name=name,
                )
                consumer.start()
                self.consumers.append(consumer)
                log.info("%s consumes %s (batches of up to %s)", name, queue, consumer.batch_size)

    def _start_schedules(self) -> None:
        """EventBridge schedules of the template; LOCAL_SCHEDULE_SCALE < 1 runs them sooner."""
        scale = float(os.environ.get("LOCAL_SCHEDULE_SCALE", "1"))
        for name, spec in self.template.functions.items():
            for event in spec.events.values():
                if event.get("Type") not in ("ScheduleV2", "Schedule"):
                    continue
                props = event["Properties"]
                payload = json.loads(props["Input"]) if props.get("Input") else {}
                if self.scheduler.add(
                    name,
                    props["ScheduleExpression"],
                    payload,
                    functools.partial(self.invoke, name),
                    scale=scale,
                    detach=name in LOOPING_SCHEDULES,
                    immediately=name in LOOPING_SCHEDULES,
                ):
                    log.info("%s scheduled: %s", name, props["ScheduleExpression"])

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        """Call a function from a thread (the queue consumer, the scheduler, tests)."""
        return self.pools[function].invoke(event)

    async def ainvoke(self, function: str, event: dict[str, Any]) -> Invocation:
        """Call a function from the loop (the gateway)."""
        return await self.pools[function].run(event)

    def stop(self) -> None:
        self.scheduler.stop()
        for consumer in self.consumers:
            consumer.stop()
        self.consumers.clear()
        if self.gateway is not None and self._loop is not None:
            asyncio.run_coroutine_threadsafe(self.gateway.close(), self._loop.loop).result(10)
            self.gateway = None
        # Every pool at once, as they were warmed: each waits for its workers to exit (a busy
        # one for up to a second), and one after the other that was seconds per stop.
        threads = [threading.Thread(target=p.close) for p in self.pools.values()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.pools.clear()
        if self._loop is not None:
            self._loop.stop()
            self._loop = None
        self.state_path.unlink(missing_ok=True)
        self._resources.close()


def _ensure_queue(
    endpoint: str,
    aws: dict[str, str],
    visibility: int,
    max_receive: int,
    name: str = QUEUE_NAME,
    dlq_name: str = DLQ_NAME,
) -> str:
    """A queue and its dead-letter queue, redriving after `max_receive` receives."""
    import boto3

    client = boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name=aws["AWS_DEFAULT_REGION"],
        aws_access_key_id=aws["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=aws["AWS_SECRET_ACCESS_KEY"],
    )
    dlq_url = client.create_queue(QueueName=dlq_name)["QueueUrl"]
    dlq_arn = client.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive)})
    url: str = client.create_queue(
        QueueName=name,
        Attributes={"VisibilityTimeout": str(visibility), "RedrivePolicy": redrive},
    )["QueueUrl"]
    return url
