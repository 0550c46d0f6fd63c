"""Read API: boards, entries, players' ranks, windows, in one Redis round trip; players' past
results from the archive.

No boto3 and no psycopg at cold start: the PostgreSQL read model is imported only when Redis
cannot answer (degraded mode) or a board's serving data is missing.

Reads need no token, but a token that is sent must be valid: the routes have no authorizer
(API Gateway cannot make one optional), so `optional_caller` verifies it here and every read
knows who reads. PyJWT and cryptography are imported with the first token, never at cold start.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.http import (
    create_app,
    no_query,
    optional_caller,
    query,
    token_verifier,
)
from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.services.read_base import ArchiveSource, ReadModel
from leaderboard.services.reads import ReadService
from leaderboard.settings import DatabaseSettings, RedisSettings, TokenSettings
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.serving_index import RedisIndex

settings = RedisSettings.from_env()
database = DatabaseSettings.from_env()  # validated now, connected only if ever needed
tokens = token_verifier(
    TokenSettings.from_env()
)  # validated now, keys fetched with the first token


def postgres_reads() -> ReadModel:
    from leaderboard.stores.postgres.database import Database
    from leaderboard.stores.postgres.record_reads import PostgresReadModel

    return PostgresReadModel(Database(database.connection_url))


def archive_reads() -> ArchiveSource:
    from leaderboard.stores.postgres.archive import ArchiveStore
    from leaderboard.stores.postgres.database import Database

    return ArchiveStore(Database(database.connection_url))


reads = ReadService(
    RedisIndex(connect(settings.url, cluster=settings.cluster)),
    fallback=postgres_reads,
    archive=archive_reads,
)
app = create_app()


@app.get("/boards")
def list_boards() -> dict[str, Any]:
    who = optional_caller(app, tokens)
    no_query(app)
    return reads.list_boards(caller=who)


@app.get("/tournaments")
def tournaments() -> dict[str, Any]:
    who = optional_caller(app, tokens)
    return reads.tournaments(query(app), caller=who)


@app.get("/boards/<board_id>")
def get_board(board_id: str) -> dict[str, Any]:
    who = optional_caller(app, tokens)
    no_query(app)
    return reads.get_board(board_id, caller=who)


@app.get("/boards/<board_id>/periods")
def periods(board_id: str) -> dict[str, Any]:
    who = optional_caller(app, tokens)
    no_query(app)
    return reads.periods(board_id, caller=who)


@app.get("/boards/<board_id>/entries")
def entries(board_id: str) -> dict[str, Any]:
    return reads.entries(board_id, query(app), caller=optional_caller(app, tokens))


@app.get("/boards/<board_id>/players")
def players(board_id: str) -> dict[str, Any]:
    return reads.players(board_id, query(app), caller=optional_caller(app, tokens))


@app.get("/boards/<board_id>/players/<player_id>")
def player(board_id: str, player_id: str) -> dict[str, Any]:
    return reads.player(board_id, player_id, query(app), caller=optional_caller(app, tokens))


@app.get("/boards/<board_id>/players/<player_id>/around")
def around(board_id: str, player_id: str) -> dict[str, Any]:
    return reads.around(board_id, player_id, query(app), caller=optional_caller(app, tokens))


@app.get("/boards/<board_id>/players/<player_id>/standings")
def standings(board_id: str, player_id: str) -> dict[str, Any]:
    return reads.standings(board_id, player_id, query(app), caller=optional_caller(app, tokens))


@app.get("/boards/<board_id>/players/<player_id>/history")
def history(board_id: str, player_id: str) -> dict[str, Any]:
    return reads.history(board_id, player_id, query(app), caller=optional_caller(app, tokens))


@app.get("/boards/<board_id>/league")
def league(board_id: str) -> dict[str, Any]:
    return reads.league(board_id, query(app), caller=optional_caller(app, tokens))


@app.get("/boards/<board_id>/league/players/<player_id>")
def league_player(board_id: str, player_id: str) -> dict[str, Any]:
    return reads.league_player(board_id, player_id, query(app), caller=optional_caller(app, tokens))


@app.get("/boards/<board_id>/league/groups/<group_id>")
def league_group(board_id: str, group_id: str) -> dict[str, Any]:
    return reads.league_group(board_id, group_id, query(app), caller=optional_caller(app, tokens))


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)
