"""Outbox relay (scheduled): sends events the write path could not, so none is lost."""

from __future__ import annotations

import dataclasses
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.services.relay import OutboxRelay
from leaderboard.settings import DatabaseSettings, QueueSettings, RedisSettings
from leaderboard.stores.postgres import BoardRepository, Database
from leaderboard.stores.redis_client import connect
from leaderboard.stores.redis_index import RedisIndex
from leaderboard.stores.score_queue import SqsScoreQueue, make_sqs_client
from leaderboard.stores.standings import StandingsStore

redis_settings = RedisSettings.from_env()
queue_settings = QueueSettings.from_env()
db = Database(DatabaseSettings.from_env().url)
boards = BoardRepository(db)
relay = OutboxRelay(
    RedisIndex(connect(redis_settings.url, cluster=redis_settings.cluster)),
    StandingsStore(db),
    SqsScoreQueue(make_sqs_client(queue_settings.endpoint_url), queue_settings.queue_url),
)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    min_age = event.get("min_age_ms") if isinstance(event, dict) else None
    if isinstance(min_age, int) and min_age >= 0:
        relay.min_age_ms = min_age
    report = relay.run([board.board_id for board in boards.all()])
    metrics.add_metric(name="OutboxEventsRelayed", unit="Count", value=report.sent)
    logger.info("outbox relayed", extra=dataclasses.asdict(report))
    return dataclasses.asdict(report)
