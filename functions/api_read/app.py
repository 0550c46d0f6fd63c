"""Read API: boards, entries, a player's rank, windows. Redis only: no boto3, no psycopg."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.http import create_app, query
from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.services.reads import ReadService
from leaderboard.settings import RedisSettings
from leaderboard.stores.redis_client import connect
from leaderboard.stores.redis_index import RedisIndex

settings = RedisSettings.from_env()
reads = ReadService(RedisIndex(connect(settings.url, cluster=settings.cluster)))
app = create_app()


@app.get("/boards")
def list_boards() -> dict[str, Any]:
    return reads.list_boards()


@app.get("/boards/<board_id>")
def get_board(board_id: str) -> dict[str, Any]:
    return reads.get_board(board_id)


@app.get("/boards/<board_id>/entries")
def entries(board_id: str) -> dict[str, Any]:
    return reads.entries(board_id, query(app))


@app.get("/boards/<board_id>/players/<player_id>")
def player(board_id: str, player_id: str) -> dict[str, Any]:
    return reads.player(board_id, player_id, query(app))


@app.get("/boards/<board_id>/players/<player_id>/around")
def around(board_id: str, player_id: str) -> dict[str, Any]:
    return reads.around(board_id, player_id, query(app))


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
