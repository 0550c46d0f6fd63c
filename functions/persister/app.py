"""Persister: SQS batches of score events into PostgreSQL, the system of record.

Each record is parsed on its own (a poison record fails alone and, after the redrive limit,
lands in the dead-letter queue); the good ones are stored together in one transaction. If the
database cannot be reached, the whole batch is reported failed and SQS delivers it again.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.domain.errors import Unavailable
from leaderboard.domain.queue_messages import ReceivedEvent, parse_event
from leaderboard.settings import DatabaseSettings
from leaderboard.stores.postgres.database import Database
from leaderboard.stores.postgres.record import StandingsStore

store = StandingsStore(Database(DatabaseSettings.from_env().connection_url))
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)


def parse_record(record: SQSRecord) -> tuple[ReceivedEvent, str]:
    """The event, and its message as delivered: the audit log keeps the message verbatim."""
    return parse_event(record.body), record.body


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    records = event.get("Records") or []
    with processor(records=records, handler=parse_record):
        results = processor.process()
    parsed = [result for status, result, _ in results if status == "success"]
    poison = len(results) - len(parsed)
    try:
        new = store.write([event for event, _ in parsed], [message for _, message in parsed])
    except Unavailable:
        logger.warning(
            "database unavailable: the whole batch will be delivered again",
            extra={"records": len(records)},
        )
        metrics.add_metric(name="BatchesRetried", unit="Count", value=1)
        return {"batchItemFailures": [{"itemIdentifier": r["messageId"]} for r in records]}
    metrics.add_metric(name="EventsPersisted", unit="Count", value=new)
    metrics.add_metric(name="DuplicateEvents", unit="Count", value=len(parsed) - new)
    metrics.add_metric(name="PoisonRecords", unit="Count", value=poison)
    logger.info(
        "batch stored",
        extra={
            "records": len(records),
            "new": new,
            "duplicates": len(parsed) - new,
            "poison": poison,
        },
    )
    return dict(processor.response())
