"""Live publisher (started every minute): for about a minute, publishes each board's changes
to the event API as the writes wake it, at most LIVE_PUBLISH_RATE messages per channel a second.

Only this function may publish (IAM); subscribers connect to the event API directly. Nothing
here is on the write path: if this function fails, writes and persistence go on and clients
fall back to reading.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.services.live import LivePublisher
from leaderboard.settings import LiveSettings, RedisSettings
from leaderboard.stores.aws.event_api import EventApiPublisher
from leaderboard.stores.redis.client import connect
from leaderboard.stores.redis.live.index import LiveIndex
from leaderboard.stores.redis.live.wakes import PUBLISHER_CLIENT_NAME

# Leave this much of the function timeout for releasing the lease and flushing metrics.
_MARGIN_MS = 5_000

redis_settings = RedisSettings.from_env()
settings = LiveSettings.from_env()
index = LiveIndex(
    connect(redis_settings.url, cluster=redis_settings.cluster, client_name=PUBLISHER_CLIENT_NAME),
    max_changed=settings.max_changed,
    max_watch_checks=settings.max_watch_checks,
)
publisher = LivePublisher(
    index,
    EventApiPublisher(settings.events_url),
    rate=settings.publish_rate,
    namespace=settings.namespace,
    player_namespace=settings.player_namespace,
)


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    available = max(0.0, (context.get_remaining_time_in_millis() - _MARGIN_MS) / 1000)
    seconds = min(float(settings.run_seconds), available)
    # A scheduled run goes on past LIVE_RUN_SECONDS until the next minute's run is there to
    # take over (or its time is up); a short run by hand just stops.
    wait = available - seconds
    if isinstance(event, dict) and isinstance(event.get("run_seconds"), int | float):
        seconds, wait = min(seconds, max(0.0, float(event["run_seconds"]))), 0.0
    report = publisher.run(context.aws_request_id, seconds, wait_for_successor=wait)
    metrics.add_metric(name="LiveTicks", unit="Count", value=report.ticks)
    metrics.add_metric(name="LiveReads", unit="Count", value=report.reads)
    metrics.add_metric(name="LivePublishes", unit="Count", value=report.published)
    metrics.add_metric(name="LivePlayerMessages", unit="Count", value=report.player_messages)
    metrics.add_metric(name="LivePublishFailures", unit="Count", value=report.failed)
    metrics.add_metric(name="LivePublishRefused", unit="Count", value=report.refused)
    metrics.add_metric(name="LivePublishRetried", unit="Count", value=report.retried)
    metrics.add_metric(name="LiveMessagesTruncated", unit="Count", value=report.truncated)
    metrics.add_metric(name="LiveBoardErrors", unit="Count", value=report.board_errors)
    summary = dataclasses.asdict(report)
    if report.failed or report.board_errors:
        logger.warning("live publisher run had failures", extra=summary)
    else:
        logger.info("live publisher run", extra=summary)
    return summary
