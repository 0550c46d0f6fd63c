"""Webhook delivery: period.ended events from the webhook queue, signed and POSTed to the
configured URL, one attempt per message and receive.

The decisions are leaderboard/services/webhooks.py's; here they become SQS actions. Delivered:
the record succeeds (the event source deletes it). Worth retrying (5xx, 408, 429, no answer):
the message's visibility timeout is set to the backoff and the record fails, so SQS offers it
again then, and moves it to the dead-letter queue after the redrive policy's maxReceiveCount.
Permanent (another 4xx, a redirect, not an event): sent to the dead-letter queue at once and
the record succeeds, so a receiver that refuses is not called seven more times.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import boto3
from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from leaderboard.api.observability import logger, metrics, tracer
from leaderboard.services.webhooks import (
    Attempt,
    NotAnEvent,
    Outcome,
    WebhookDelivery,
    envelope_of,
)
from leaderboard.settings import WebhookSettings
from leaderboard.stores.aws.webhook_sender import UrllibTransport

settings = WebhookSettings.from_env()
sqs = boto3.client("sqs", endpoint_url=settings.sqs_endpoint_url)
processor = BatchProcessor(event_type=EventType.SQS, raise_on_entire_batch_failure=False)

_secret: bytes | None = None
_secret_lock = threading.Lock()


def secret() -> bytes:
    """Fetched once per execution environment, on the first delivery."""
    global _secret
    if _secret is None:
        with _secret_lock:
            if _secret is None:
                _secret = settings.load_secret()
    return _secret


delivery = WebhookDelivery(
    UrllibTransport(),
    settings.url,
    secret,
    timeout_s=settings.timeout_ms / 1000,
    retry_base_seconds=settings.retry_base_seconds,
)


class RetryLater(Exception):
    """Fails the record: SQS offers it again once its new visibility timeout runs out."""


def dead_letter(record: SQSRecord, reason: str, status: int | None) -> None:
    attributes: dict[str, Any] = {
        "failure": {"DataType": "String", "StringValue": reason[:256]},
    }
    if status is not None:
        attributes["status"] = {"DataType": "Number", "StringValue": str(status)}
    sqs.send_message(
        QueueUrl=settings.dead_letter_queue_url,
        MessageBody=record.body,
        MessageAttributes=attributes,
    )


def deliver_record(record: SQSRecord) -> str:
    attempt_number = int(record.attributes.approximate_receive_count or 1)
    try:
        envelope = envelope_of(record.body)
    except NotAnEvent as exc:
        logger.error("not a period.ended event: dead-lettered", extra={"reason": str(exc)})
        dead_letter(record, str(exc), None)
        metrics.add_metric(name="WebhooksDeadLettered", unit="Count", value=1)
        return "dead-lettered"
    result: Attempt = delivery.deliver(envelope, attempt_number, int(time.time()))
    context = {
        "event_id": envelope["id"],
        "attempt": attempt_number,
        "status": result.status,
        "detail": result.detail,
    }
    if result.outcome is Outcome.DELIVERED:
        logger.info("webhook delivered", extra=context)
        metrics.add_metric(name="WebhooksDelivered", unit="Count", value=1)
        return "delivered"
    if result.outcome is Outcome.PERMANENT:
        logger.error("webhook refused: dead-lettered without retrying", extra=context)
        dead_letter(record, result.detail, result.status)
        metrics.add_metric(name="WebhooksDeadLettered", unit="Count", value=1)
        return "dead-lettered"
    assert result.retry_in_seconds is not None
    logger.warning(
        "webhook not delivered: retried later",
        extra={**context, "retry_in": result.retry_in_seconds},
    )
    metrics.add_metric(name="WebhookRetries", unit="Count", value=1)
    sqs.change_message_visibility(
        QueueUrl=settings.queue_url,
        ReceiptHandle=record.receipt_handle,
        VisibilityTimeout=result.retry_in_seconds,
    )
    raise RetryLater(f"{envelope['id']}: {result.detail}; again in {result.retry_in_seconds} s")


@logger.inject_lambda_context(clear_state=True)
@tracer.capture_lambda_handler(capture_response=False)
@metrics.log_metrics(raise_on_empty_metrics=False)
def lambda_handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    with processor(records=event.get("Records") or [], handler=deliver_record):
        processor.process()
    return dict(processor.response())
