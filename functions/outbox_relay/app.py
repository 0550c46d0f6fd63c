"""Maintenance (scheduled every minute): rebuilds boards whose serving data was lost, once
their in-flight events are stored, then relays outbox events the write path could not send."""

from __future__ import annotations

import dataclasses
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.services.rebuild import Rebuilder
from leaderboard.services.relay import OutboxRelay
from leaderboard.settings import DatabaseSettings, QueueSettings, RedisSettings
from leaderboard.stores.aws.score_queue import SqsScoreQueue, make_sqs_client
from leaderboard.stores.postgres.boards import BoardRepository
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.serving_index import RedisIndex

redis_settings = RedisSettings.from_env()
queue_settings = QueueSettings.from_env()
db = Database(DatabaseSettings.from_env().connection_url)
boards = BoardRepository(db)
index = RedisIndex(connect(redis_settings.url, cluster=redis_settings.cluster))
queue = SqsScoreQueue(make_sqs_client(queue_settings.endpoint_url), queue_settings.queue_url)
tracer.patch(["botocore"])  # X-Ray subsegments for SQS calls
relay = OutboxRelay(index, StandingsStore(db), queue)
rebuilder = Rebuilder(db, index)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    min_age = event.get("min_age_ms") if isinstance(event, dict) else None
    min_age = min_age if isinstance(min_age, int) and min_age >= 0 else None  # this run only
    rebuilt = rebuilder.recover(queue_in_flight=queue.in_flight(), now_ms=index.server_time_ms())
    for done in rebuilt:
        logger.info("board rebuilt from the record", extra=done.to_json())
    metrics.add_metric(name="BoardsRebuilt", unit="Count", value=len(rebuilt))
    report = relay.run([board.board_id for board in boards.all()], min_age_ms=min_age)
    metrics.add_metric(name="OutboxEventsRelayed", unit="Count", value=report.sent)
    logger.info("outbox relayed", extra=dataclasses.asdict(report))
    return dataclasses.asdict(report) | {"rebuilt": [r.board_id for r in rebuilt]}
