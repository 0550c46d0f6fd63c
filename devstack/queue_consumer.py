"""A local stand-in for Lambda's SQS event source mapping.

Polls the local queue, gathers a batch up to the template's BatchSize or until its
MaximumBatchingWindowInSeconds runs out, invokes the function with an SQS event, and deletes
what succeeded. Failed records stay in the queue: they come back after the visibility timeout
and, past the redrive limit, SQS moves them to the dead-letter queue, as in AWS.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

log = logging.getLogger("devstack.sqs")
GATHER_PAUSE = 0.2  # seconds between receives while a batching window is open


def sqs_record(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    return {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": message.get("Attributes", {}),
        "messageAttributes": {
            key: {
                "stringValue": value.get("StringValue"),
                "dataType": value["DataType"],
                "stringListValues": [],
                "binaryListValues": [],
            }
            for key, value in (message.get("MessageAttributes") or {}).items()
        },
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }


class QueueConsumer:
    def __init__(
        self,
        client: Any,
        queue_url: str,
        invoke: Callable[[dict[str, Any]], Any],
        *,
        batch_size: int,
        window_seconds: float,
        name: str,
    ) -> None:
        self.client = client
        self.queue_url = queue_url
        self.invoke = invoke
        self.batch_size = batch_size
        self.window = window_seconds
        self.name = name
        self.queue_arn = client.get_queue_attributes(
            QueueUrl=queue_url, AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        self.region = client.meta.region_name
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"sqs-{name}", daemon=True)
        self.delivered = 0

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _gather(self) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        deadline: float | None = None
        while not self._stop.is_set() and len(messages) < self.batch_size:
            wait = 1 if deadline is None else max(0.0, deadline - time.monotonic())
            got = self.client.receive_message(
                QueueUrl=self.queue_url,
                MaxNumberOfMessages=min(10, self.batch_size - len(messages)),
                WaitTimeSeconds=min(1, int(wait)),
                AttributeNames=["All"],
                MessageAttributeNames=["All"],
            ).get("Messages", [])
            messages += got
            if messages and deadline is None:
                deadline = time.monotonic() + self.window
            if deadline is not None and (time.monotonic() >= deadline or not got):
                break
            if deadline is not None and len(got) < 10:
                # The queue is drained for now: let the window gather more, rather than asking
                # again for each message as it arrives (one receive per event at a few hundred
                # events a second is most of the SQS endpoint's work).
                self._stop.wait(min(GATHER_PAUSE, max(0.0, deadline - time.monotonic())))
        return messages

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                messages = self._gather()
                if messages:
                    self._deliver(messages)
            except Exception:  # keep polling: a local hiccup must not stop the consumer
                log.exception("%s: polling failed", self.name)
                self._stop.wait(1)

    def _deliver(self, messages: list[dict[str, Any]]) -> None:
        started = time.perf_counter()
        event = {"Records": [sqs_record(m, self.queue_arn, self.region) for m in messages]}
        try:
            response = self.invoke(event) or {}
        except Exception as exc:
            log.warning(
                "%s: function error, %d records will be retried: %s", self.name, len(messages), exc
            )
            return
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        done = [m for m in messages if m["MessageId"] not in failed]
        for start in range(0, len(done), 10):
            self.client.delete_message_batch(
                QueueUrl=self.queue_url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]}
                    for i, m in enumerate(done[start : start + 10])
                ],
            )
        self.delivered += len(done)
        log.info(
            "%s: batch of %d delivered (%d failed, retried later) in %.0f ms; %d in all",
            self.name,
            len(messages),
            len(failed),
            (time.perf_counter() - started) * 1000,
            self.delivered,
        )
