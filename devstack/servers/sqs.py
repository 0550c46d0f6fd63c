"""A local SQS endpoint (moto's SQS model behind devstack.sqs_server) in a process of its own."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from devstack.servers.process import _PythonServer, free_port

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType


class LocalSQS(_PythonServer):
    """moto's SQS in a child process of its own (``python -m devstack.sqs_server``).

    Its state lives in that process: queues vanish when it stops. It is a process, not a
    thread of ours, so its work never competes for this interpreter's lock.
    """

    _kind = "sqs-server"
    _log_prefix = "sqs-"
    _log_name = "sqs.log"
    REGION = "us-east-1"

    def __init__(self, port: int | None = None) -> None:
        super().__init__()
        self._port_fixed = port is not None
        self._port = port if port is not None else free_port()

    @property
    def port(self) -> int:
        return self._port

    @property
    def endpoint_url(self) -> str:
        """HTTP endpoint to pass as ``endpoint_url`` to boto3."""
        return self._url("http", self._port)

    def _argv(self, attempt: int) -> list[str]:
        return ["devstack.sqs_server", str(self._port)]

    def _ports(self) -> tuple[int, ...]:
        return (self._port,)

    def client(self) -> SQSClient:
        """A boto3 SQS client for this endpoint with dummy credentials."""
        import boto3

        return boto3.client(
            "sqs",
            region_name=self.REGION,
            endpoint_url=self.endpoint_url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106 - moto accepts anything
        )

    def create_queue(
        self,
        name: str,
        *,
        dlq_name: str | None = None,
        max_receive_count: int = 3,
        visibility_timeout: int = 30,
    ) -> str:
        """Create ``name`` (optionally redriving to a new DLQ) and return its queue URL."""
        sqs = self.client()
        attributes: dict[QueueAttributeNameType, str] = {
            "VisibilityTimeout": str(visibility_timeout)
        }
        if dlq_name is not None:
            dlq_url = sqs.create_queue(QueueName=dlq_name)["QueueUrl"]
            dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
                "Attributes"
            ]["QueueArn"]
            attributes["RedrivePolicy"] = json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)}
            )
        return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
