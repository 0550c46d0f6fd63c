"""The score queue (SQS): carries every score event to the persister."""

from __future__ import annotations

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
                MessageAttributes={
                    "type": {"DataType": "String", "StringValue": "score_submitted"},
                    "board_id": {"DataType": "String", "StringValue": event.board_id},
                },
            )
        except (BotoCoreError, ClientError) as exc:
            raise Unavailable(
                "the score queue is unavailable; retry with the same Idempotency-Key", retry_after=1
            ) from exc

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


def make_sqs_client(endpoint_url: str | None = None) -> Any:
    """An SQS client with short timeouts: a hung send must not hold the API response."""
    import boto3
    from botocore.config import Config

    config = Config(
        connect_timeout=2, read_timeout=3, retries={"max_attempts": 3, "mode": "standard"}
    )
    return boto3.client("sqs", endpoint_url=endpoint_url, config=config)
