"""Rollover (EventBridge Scheduler, daily/weekly/monthly shortly after 00:00 UTC, and every
minute for the boards whose custom periods are due): archives closed periods into PostgreSQL and
frees their serving keys after the retention.

The event may name the period kinds ({"kinds": ["weekly"]}), the boards ({"boards": ["arena"]}),
only the boards that are due ({"due": true}) and, to re-run or test, the instant to act at
({"at": "2026-11-23T00:05:00Z"}); otherwise it acts now, on every kind of every board.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.domain.errors import ConfigurationError
from leaderboard.domain.periods import BOARD_PERIOD_KINDS
from leaderboard.services.rollover import Rollover
from leaderboard.settings import DatabaseSettings, RedisSettings
from leaderboard.stores.aws.event_bus import sink_from_env
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.serving_index import RedisIndex

redis_settings = RedisSettings.from_env()
try:
    retention = timedelta(days=float(os.environ.get("ROLLOVER_RETENTION_DAYS", "7")))
except ValueError:
    raise ConfigurationError("ROLLOVER_RETENTION_DAYS must be a number of days") from None
db = Database(DatabaseSettings.from_env().connection_url)
index = RedisIndex(connect(redis_settings.url, cluster=redis_settings.cluster))
sink = sink_from_env()  # period.ended events: the deployment's bus (none configured: dropped)
SAFETY_MS = 60_000  # stop between chunks with a minute left; the next run resumes


def _instant(event: dict[str, Any]) -> datetime | None:
    raw = event.get("at")
    if raw is None:
        return None
    moment = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    event = event if isinstance(event, dict) else {}
    kinds = {k for k in event.get("kinds") or () if k in BOARD_PERIOD_KINDS} or None
    at = _instant(event)
    rollover = Rollover(db, index, (lambda: at) if at else _now, retention=retention, sink=sink)
    boards = {str(b) for b in event["boards"]} if isinstance(event.get("boards"), list) else None
    report = rollover.run(
        kinds,
        keep_going=lambda: context.get_remaining_time_in_millis() > SAFETY_MS,
        board_ids=boards,
        due=event.get("due") is True,
    )
    metrics.add_metric(name="PeriodsArchived", unit="Count", value=len(report.archived))
    metrics.add_metric(name="ArchiveDifferences", unit="Count", value=report.differences)
    logger.info(
        "rollover finished" if report.complete else "rollover will resume", extra=report.to_json()
    )
    return report.to_json()


def _now() -> datetime:
    return datetime.now(UTC)
