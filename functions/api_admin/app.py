"""Admin API: board configuration, seasons ended by hand, player removal, hidden players, flagged
submissions, health.
PostgreSQL + Redis."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.http import caller, create_app, json_body, json_response, no_query, query
from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.domain.auth import require_admin
from leaderboard.services.boards import BoardAdminService
from leaderboard.services.health import HealthService
from leaderboard.settings import DatabaseSettings, HookSettings, QueueSettings, RedisSettings
from leaderboard.stores.aws.score_queue import SqsScoreQueue, make_sqs_client
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.serving_index import RedisIndex

redis_settings = RedisSettings.from_env()
db = Database(DatabaseSettings.from_env().connection_url)
index = RedisIndex(connect(redis_settings.url, cluster=redis_settings.cluster))
queue_settings = QueueSettings.from_env()
queue = SqsScoreQueue(make_sqs_client(queue_settings.endpoint_url), queue_settings.queue_url)
boards = BoardAdminService(db, index, hook_targets=HookSettings.from_env().targets)
health = HealthService({"redis": index.ping, "postgres": db.ping, "queue": queue.ping})
tracer.patch(["botocore"])  # X-Ray subsegments for SQS calls
app = create_app()


@app.put("/boards/<board_id>")
def put_board(board_id: str) -> Response:
    who = caller(app)
    require_admin(who)  # before reading the body: a non-admin learns nothing about it
    no_query(app)
    board, created = boards.put_board(board_id, json_body(app), who)
    return json_response(201 if created else 200, board)


@app.delete("/boards/<board_id>/players/<player_id>")
def delete_player(board_id: str, player_id: str) -> Response:
    who = caller(app)
    require_admin(who)
    no_query(app)
    boards.delete_player(board_id, player_id, who)
    return Response(status_code=204, body="")


@app.put("/boards/<board_id>/hidden/<player_id>")
def hide_player(board_id: str, player_id: str) -> Response:
    who = caller(app)
    require_admin(who)
    no_query(app)
    body, created = boards.hide_player(board_id, player_id, json_body(app, required=False), who)
    return json_response(201 if created else 200, body)


@app.delete("/boards/<board_id>/hidden/<player_id>")
def unhide_player(board_id: str, player_id: str) -> Response:
    who = caller(app)
    require_admin(who)
    no_query(app)
    boards.unhide_player(board_id, player_id, who)
    return Response(status_code=204, body="")


@app.get("/boards/<board_id>/hidden")
def hidden_players(board_id: str) -> Response:
    who = caller(app)
    require_admin(who)
    return json_response(200, boards.hidden_players(board_id, query(app), who))


@app.post("/boards/<board_id>/periods/end")
def end_period(board_id: str) -> Response:
    who = caller(app)
    require_admin(who)
    no_query(app)
    return json_response(200, boards.end_period(board_id, who))


@app.post("/boards/<board_id>/rebuild")
def rebuild(board_id: str) -> Response:
    who = caller(app)
    require_admin(who)
    no_query(app)
    return json_response(200, boards.rebuild(board_id, who))


@app.get("/boards/<board_id>/flags")
def flags(board_id: str) -> Response:
    who = caller(app)
    require_admin(who)
    return json_response(200, boards.flags(board_id, query(app), who))


@app.get("/health")
def get_health() -> Response:
    no_query(app)
    report = health.check()
    ok = report["status"] == "ok"
    return json_response(200 if ok else 503, report, {} if ok else {"Retry-After": "5"})


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
