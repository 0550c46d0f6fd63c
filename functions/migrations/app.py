"""Database migrations at deploy time: a CloudFormation custom resource.

Runs the same versioned SQL files as the local stack (they ship in the shared layer), on
create and on every update of the shared layer; a delete leaves the database alone. The
result goes back to CloudFormation through the pre-signed ResponseURL.
"""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Callable
from typing import Any

import psycopg
from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.observability import logger
from leaderboard.settings import DatabaseSettings
from leaderboard.stores.postgres.database import apply_migrations

database = DatabaseSettings.from_env()


def _respond(
    event: dict[str, Any], context: LambdaContext, status: str, reason: str, data: dict[str, Any]
) -> None:
    body = json.dumps(
        {
            "Status": status,
            "Reason": f"{reason} (log stream {context.log_stream_name})",
            "PhysicalResourceId": event.get("PhysicalResourceId") or "leaderboard-migrations",
            "StackId": event["StackId"],
            "RequestId": event["RequestId"],
            "LogicalResourceId": event["LogicalResourceId"],
            "Data": data,
        }
    ).encode()
    url = str(event["ResponseURL"])
    if not url.startswith("https://"):
        raise ValueError("CloudFormation's ResponseURL must be https")
    request = urllib.request.Request(url, data=body, method="PUT", headers={"content-type": ""})  # noqa: S310
    with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
        response.read()


def _with_retries(step: Callable[[], list[str]], attempts: int = 12) -> list[str]:
    """A new database (or its proxy) may take a few minutes to accept connections."""
    for attempt in range(1, attempts + 1):
        try:
            return step()
        except psycopg.OperationalError:
            if attempt == attempts:
                raise
            logger.info("database not reachable yet, retrying", extra={"attempt": attempt})
            time.sleep(10)
    raise AssertionError("unreachable")


@logger.inject_lambda_context(clear_state=True)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    request = event.get("RequestType")
    data: dict[str, Any] = {"applied": ""}
    try:
        if request in ("Create", "Update"):
            applied = _with_retries(lambda: apply_migrations(database.connection_url()))
            data["applied"] = ",".join(applied)
            logger.info("migrations applied", extra={"applied": applied})
        status, reason = "SUCCESS", f"{request}: ok"
    except Exception as exc:  # CloudFormation must hear of any failure, or it waits an hour
        logger.exception("migrations failed")
        status, reason = "FAILED", f"{request}: {type(exc).__name__}: {exc}"
    if "ResponseURL" in event:
        _respond(event, context, status, reason, data)
    return {"Status": status, "Reason": reason, "Data": data}
