"""Write API: score submissions (one Redis script, then one queue send), tournament sign-ups
and player-channel watches (one Redis script each).

PostgreSQL is reached only when Redis has no such board, to tell a board whose serving data
was lost (503 while it is restored) from an unknown one (404). A board with a validation hook
has it called first (one call per request); the Lambda client for hooks is made only then.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.http import (
    caller,
    create_app,
    header,
    json_body,
    json_response,
    no_query,
    query,
)
from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.domain.validation import MAX_BATCH_BODY_BYTES, known_params
from leaderboard.services.scores import ScoreService
from leaderboard.services.watches import UNWATCH_PARAMS, WatchService
from leaderboard.settings import DatabaseSettings, HookSettings, QueueSettings, RedisSettings
from leaderboard.stores.aws.score_queue import SqsScoreQueue, make_sqs_client
from leaderboard.stores.aws.validation_hooks import ValidationHooks
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.serving_index import RedisIndex

redis_settings = RedisSettings.from_env()
queue_settings = QueueSettings.from_env()
database = DatabaseSettings.from_env()
hook_settings = HookSettings.from_env()
_boards: Any = None


def board_in_record(board_id: str) -> bool:
    global _boards
    if _boards is None:
        from leaderboard.stores.postgres.boards import BoardRepository
        from leaderboard.stores.postgres.database import Database

        _boards = BoardRepository(Database(database.connection_url))
    return _boards.get(board_id) is not None


index = RedisIndex(
    connect(redis_settings.url, cluster=redis_settings.cluster),
    idempotency_ttl_seconds=redis_settings.idempotency_ttl_seconds,
    replica_acks=redis_settings.replica_acks,
    replica_ack_timeout_ms=redis_settings.replica_ack_timeout_ms,
)
scores = ScoreService(
    index,
    SqsScoreQueue(make_sqs_client(queue_settings.endpoint_url), queue_settings.queue_url),
    in_record=board_in_record,
    hooks=ValidationHooks.from_settings(hook_settings),
)
watches = WatchService(index)
tracer.patch(["botocore"])  # X-Ray subsegments for SQS calls
app = create_app()


@app.put("/boards/<board_id>/players/<player_id>/watch")
def watch(board_id: str, player_id: str) -> Response:
    who = caller(app)
    no_query(app)
    body = json_body(app, required=False)
    return json_response(200, watches.put(board_id, player_id, body, who))


@app.delete("/boards/<board_id>/players/<player_id>/watch")
def unwatch(board_id: str, player_id: str) -> Response:
    who = caller(app)
    params = query(app)
    known_params(params, UNWATCH_PARAMS)
    watches.end(board_id, player_id, params.get("period"), params.get("region"), who)
    return Response(status_code=204, body="")


@app.post("/boards/<board_id>/join")
def join(board_id: str) -> Response:
    who = caller(app)
    no_query(app)
    return json_response(200, scores.join(board_id, json_body(app, required=False), who))


@app.post("/boards/<board_id>/scores")
def submit(board_id: str) -> Response:
    who = caller(app)
    no_query(app)
    result = scores.submit(board_id, json_body(app), who, header(app, "Idempotency-Key"))
    headers = {"Idempotent-Replayed": "true"} if result.replayed else {}
    metrics.add_metric(
        name="ScoreReplayed" if result.replayed else "ScoreSubmitted", unit="Count", value=1
    )
    return json_response(200, result.body, headers)


@app.post("/boards/<board_id>/scores/batch")
def submit_batch(board_id: str) -> Response:
    who = caller(app)
    no_query(app)
    batch = scores.submit_batch(board_id, json_body(app, max_bytes=MAX_BATCH_BODY_BYTES), who)
    for name, value in (
        ("ScoreSubmitted", batch.submitted),
        ("ScoreReplayed", batch.replayed),
        ("BatchItemFailed", batch.failed),
    ):
        if value:
            metrics.add_metric(name=name, unit="Count", value=value)
    return json_response(200, batch.body)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
