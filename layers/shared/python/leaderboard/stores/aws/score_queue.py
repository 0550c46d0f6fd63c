"""The score queue (SQS): carries every score event to the persister."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from leaderboard.domain.errors import Unavailable
from leaderboard.domain.events import ScoreEvent


class SqsScoreQueue:
    """Sends events; a failed send surfaces as 503 so the client retries with its key."""

    def __init__(self, client: Any, queue_url: str) -> None:
        self.client = client
        self.queue_url = queue_url

    def send(self, event: ScoreEvent) -> None:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.send_message(
                QueueUrl=self.queue_url,
                MessageBody=event.to_message(),
                MessageAttributes=_attributes(event),
            )
        except (BotoCoreError, ClientError) as exc:
            raise Unavailable(
                "the score queue is unavailable; retry with the same Idempotency-Key", retry_after=1
            ) from exc

    def send_many(self, events: Sequence[ScoreEvent]) -> set[int]:
        """Send events in SQS batches (10 entries, 256 KiB at most), a few batches at a time;
        the positions of the events that could not be sent are returned, not raised: each was
        applied, and its client retries it (or the outbox relay sends it)."""
        from botocore.exceptions import BotoCoreError, ClientError

        chunks = list(_chunks(events))

        def send(chunk: list[tuple[int, str, ScoreEvent]]) -> set[int]:
            try:
                reply = self.client.send_message_batch(
                    QueueUrl=self.queue_url,
                    Entries=[
                        {
                            "Id": str(position),
                            "MessageBody": body,
                            "MessageAttributes": _attributes(event),
                        }
                        for position, body, event in chunk
                    ],
                )
            except (BotoCoreError, ClientError):
                return {position for position, _, _ in chunk}
            return {int(failed["Id"]) for failed in reply.get("Failed", [])}

        if len(chunks) <= 1:
            return set().union(*map(send, chunks))
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max_workers=min(_PARALLEL_SENDS, len(chunks))) as pool:
            return set().union(*pool.map(send, chunks))

    def in_flight(self) -> int:
        """Messages waiting, being processed or delayed (approximate, as SQS reports it)."""
        names = [
            "ApproximateNumberOfMessages",
            "ApproximateNumberOfMessagesNotVisible",
            "ApproximateNumberOfMessagesDelayed",
        ]
        attributes = self.client.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=names
        )["Attributes"]
        return sum(int(attributes.get(name, 0)) for name in names)

    def ping(self) -> bool:
        self.client.get_queue_attributes(QueueUrl=self.queue_url, AttributeNames=["QueueArn"])
        return True


_BATCH_ENTRIES = 10
_BATCH_BYTES = 256 * 1024
_PARALLEL_SENDS = 8


def _attributes(event: ScoreEvent) -> dict[str, Any]:
    return {
        "type": {"DataType": "String", "StringValue": "score_submitted"},
        "board_id": {"DataType": "String", "StringValue": event.board_id},
    }


def _chunks(events: Sequence[ScoreEvent]) -> list[list[tuple[int, str, ScoreEvent]]]:
    """SendMessageBatch's limits: 10 entries and 256 KiB of bodies (attributes counted)."""
    chunks: list[list[tuple[int, str, ScoreEvent]]] = []
    size = 0
    for position, event in enumerate(events):
        body = event.to_message()
        cost = len(body.encode()) + 64 + len(event.board_id)
        if not chunks or len(chunks[-1]) == _BATCH_ENTRIES or size + cost > _BATCH_BYTES:
            chunks.append([])
            size = 0
        chunks[-1].append((position, body, event))
        size += cost
    return chunks


def make_sqs_client(endpoint_url: str | None = None) -> Any:
    """An SQS client with short timeouts: a hung send must not hold the API response."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=2, read_timeout=3, retries={"max_attempts": 3, "mode": "standard"}
    )
    return boto3.client("sqs", endpoint_url=endpoint_url, config=config)
