"""`python -m devstack.sqs_server PORT`: moto's SQS, served from a process of its own.

The local stack used to serve moto from a thread of the gateway's process. Under load moto took
about 40% of that process's samples, under the same interpreter lock as the gateway, and a
SendMessage cost about 2.5 ms of CPU in moto's werkzeug server, Flask and response layers
before its queue model was reached. docs/local-performance.md has the profiles.

Here the queues are moto's own model (`SQSBackend`: visibility, receive counts, redrive to the
dead-letter queue, retention), reached two ways:

* the calls the stack makes all the time (SendMessage, ReceiveMessage, DeleteMessageBatch,
  GetQueueAttributes, AWS JSON protocol) go straight to the model and are answered as moto's
  responses module answers them, with long polling awaited on the loop instead of a thread;
* everything else, and any call the fast path does not take as it is (an error, an unusual
  parameter), goes through moto's own WSGI application, so errors are worded by moto.

Four of moto's hot spots are replaced while this process runs, without changing behaviour:
its clock (`unix_time_millis`, datetime arithmetic run for every message of the queue on each
send and receive) is `time.time()`, the same number; the retention check of `receive_message`
reads the retention period instead of recomputing every queue attribute, each of which counts
the whole queue, for every message it hands out (quadratic in the queue's depth);
`delete_message_batch` finds its messages in one pass over the queue instead of two per entry;
and `send_message` on a standard queue skips the FIFO-only attribute check that counted the
whole queue on every send.

One leak is bounded too: moto remembers the receipt handles of every message it ever deleted
(so deleting one twice succeeds), about 4 MB per thousand messages, forever; a queue here
remembers the last `RECENT_HANDLES` (docs/chaos.md has the soak that found it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, MutableSet
from typing import Any
from urllib.parse import urlsplit

from devstack.http11 import HttpRequest, HttpServer, Reply

JSON_TYPE = "application/x-amz-json-1.0"
MAX_WAIT_SECONDS = 20
POLL_SECONDS = 0.1  # long polls also look again this often (visibility timeouts run out)
SYSTEM_ATTRIBUTES = (
    "AWSTraceHeader",
    "ApproximateFirstReceiveTimestamp",
    "ApproximateReceiveCount",
    "MessageDeduplicationId",
    "MessageGroupId",
    "SenderId",
    "SentTimestamp",
    "SequenceNumber",
)


RECENT_HANDLES = 100_000


class RecentHandles(MutableSet[str]):
    """A set that keeps only the most recently added `limit` members."""

    def __init__(self, limit: int = RECENT_HANDLES) -> None:
        self.limit = limit
        self._members: dict[str, None] = {}

    def __contains__(self, member: object) -> bool:
        return member in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    def add(self, member: str) -> None:
        self._members[member] = None
        if len(self._members) > self.limit:
            del self._members[next(iter(self._members))]

    def discard(self, member: str) -> None:
        self._members.pop(member, None)

    def update(self, members: Iterable[str]) -> None:
        for member in members:
            self.add(member)


def patch_moto() -> None:
    import moto.sqs.models as models
    from moto.core import utils

    def unix_time(dt: Any = None) -> float:
        return time.time() if dt is None else utils.unix_time(dt)

    def unix_time_millis(dt: Any = None) -> float:
        return time.time() * 1000.0 if dt is None else utils.unix_time_millis(dt)

    def is_message_valid_based_on_retention_period(
        self: models.SQSBackend, queue_name: str, message: models.Message
    ) -> bool:
        queue: Any = self.get_queue(queue_name)
        sent: Any = message.sent_timestamp
        return int(queue.message_retention_period) + sent / 1000 > time.time()

    def delete_message_batch(
        self: models.SQSBackend, queue_name: str, receipts: list[dict[str, Any]]
    ) -> tuple[list[str], list[dict[str, Any]]]:
        queue: Any = self.get_queue(queue_name)
        owners = {
            handle: message
            for message in queue._messages
            for handle in message.all_receipt_handles
            if handle is not None
        }
        success, errors, doomed = [], [], {}
        for entry in receipts:
            handle = entry["ReceiptHandle"]
            if handle in owners:
                doomed[id(owners[handle])] = owners[handle]
            elif handle not in queue.deleted_messages:  # deleting twice is fine, as in moto
                errors.append(
                    {
                        "Id": entry["Id"],
                        "SenderFault": True,
                        "Code": "ReceiptHandleIsInvalid",
                        "Message": f'The input receipt handle "{handle}" is not a valid'
                        " receipt handle.",
                    }
                )
                continue
            success.append(entry["Id"])
        for message in doomed.values():
            queue.pending_messages.discard(message)
            queue.deleted_messages.update(message.all_receipt_handles)
        if doomed:
            queue._messages = [m for m in queue._messages if id(m) not in doomed]
        return success, errors

    original_send = models.SQSBackend.send_message

    def send_message(
        self: models.SQSBackend,
        queue_name: str,
        message_body: str,
        message_attributes: dict[str, Any] | None = None,
        delay_seconds: int | None = None,
        deduplication_id: str | None = None,
        group_id: str | None = None,
        system_attributes: dict[str, Any] | None = None,
        validate_group_id: bool = True,
    ) -> models.Message:
        queue: Any = self.get_queue(queue_name)
        delay = int(queue.delay_seconds if delay_seconds is None else delay_seconds)
        if queue.fifo_queue or deduplication_id or group_id or not 0 <= delay <= 900:
            return original_send(
                self,
                queue_name,
                message_body,
                message_attributes,
                delay_seconds,
                deduplication_id,
                group_id,
                system_attributes,
                validate_group_id,
            )
        # A standard queue: moto's own code differs only in asking the queue for its
        # ContentBasedDeduplication attribute (a FIFO one, always absent here), which computes
        # every attribute of the queue and counts its messages three times on each send.
        self._validate_message(queue, message_body=message_body, delay_seconds=delay)
        message = models.Message(str(models.random.uuid4()), message_body, system_attributes)
        if message_attributes:
            message.message_attributes = message_attributes
        message.mark_sent(delay_seconds=delay)
        queue.add_message(message)
        return message

    original_queue_init = models.Queue.__init__

    def queue_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_queue_init(self, *args, **kwargs)
        self.deleted_messages = RecentHandles()

    models.Queue.__init__ = queue_init  # type: ignore[method-assign]
    models.unix_time = unix_time
    models.unix_time_millis = unix_time_millis
    models.SQSBackend.send_message = send_message  # type: ignore[method-assign]
    models.SQSBackend.delete_message_batch = delete_message_batch  # type: ignore[method-assign]
    models.SQSBackend.is_message_valid_based_on_retention_period = (  # type: ignore[method-assign]
        is_message_valid_based_on_retention_period
    )


class _NotFast(Exception):
    """This call is left to moto's own application."""


class SqsEndpoint:
    def __init__(self) -> None:
        from moto.moto_server.werkzeug_app import create_backend_app
        from moto.sqs.models import sqs_backends

        self.app = create_backend_app("sqs")
        self.backends: Any = sqs_backends
        self.arrived = asyncio.Event()  # set, and replaced, whenever a message is sent
        self.fast: dict[str, Callable[[Any, str, dict[str, Any]], Awaitable[dict[str, Any]]]] = {
            "SendMessage": self._send_message,
            "ReceiveMessage": self._receive_message,
            "DeleteMessageBatch": self._delete_message_batch,
            "GetQueueAttributes": self._get_queue_attributes,
        }

    async def answer(self, request: HttpRequest) -> Reply:
        target = request.headers.get("x-amz-target", "")
        action = target.removeprefix("AmazonSQS.") if target.startswith("AmazonSQS.") else ""
        handler = self.fast.get(action)
        if handler is not None and request.method == "POST":
            try:
                params = json.loads(request.body or b"{}")
                backend, queue_name = self._queue_of(request, params)
                result = await handler(backend, queue_name, params)
            except Exception:  # noqa: S110 - moto's application answers it, errors included
                pass
            else:
                return Reply(200, {"content-type": JSON_TYPE}, json.dumps(result).encode())
        reply = self._wsgi(request)
        if action in ("SendMessage", "SendMessageBatch", "ChangeMessageVisibility"):
            self._wake()
        return reply

    def _queue_of(self, request: HttpRequest, params: dict[str, Any]) -> tuple[Any, str]:
        """The backend (account from the queue URL, region from the signature) and the queue."""
        path = urlsplit(str(params["QueueUrl"])).path.strip("/").split("/")
        authorization = request.headers.get("authorization", "")
        if len(path) != 2 or "Credential=" not in authorization:
            raise _NotFast
        scope = authorization.split("Credential=", 1)[1].split(",", 1)[0].split("/")
        return self.backends[path[0]][scope[2]], path[1]

    def _wake(self) -> None:
        self.arrived.set()
        self.arrived = asyncio.Event()

    # --- the fast calls: what moto/sqs/responses.py answers, straight from the model ---------

    async def _send_message(self, backend: Any, queue: str, params: dict[str, Any]) -> dict:
        from moto.sqs.utils import validate_message_attributes

        if set(params) - {"QueueUrl", "MessageBody", "MessageAttributes"}:
            raise _NotFast  # delays, FIFO groups, system attributes: moto's own path
        attributes = params.get("MessageAttributes") or {}
        validate_message_attributes(attributes)
        message = backend.send_message(queue, params["MessageBody"], message_attributes=attributes)
        self._wake()
        result = {"MD5OfMessageBody": message.body_md5, "MessageId": message.id}
        if message.message_attributes:
            result["MD5OfMessageAttributes"] = message.attribute_md5
        return result

    async def _receive_message(self, backend: Any, queue_name: str, params: dict) -> dict:
        queue = backend.get_queue(queue_name)
        if queue.fifo_queue:
            raise _NotFast
        count = int(params.get("MaxNumberOfMessages", 1))
        wait = params.get("WaitTimeSeconds")
        wait = int(queue.receive_message_wait_time_seconds if wait is None else wait)
        visibility = params.get("VisibilityTimeout")
        visibility = int(queue.visibility_timeout if visibility is None else visibility)
        if not (1 <= count <= 10 and 0 <= wait <= MAX_WAIT_SECONDS and 0 <= visibility <= 43200):
            raise _NotFast  # moto words the error
        names = set(params.get("AttributeNames", [])) | set(
            params.get("MessageSystemAttributeNames", [])
        )
        wanted = [n for n in SYSTEM_ATTRIBUTES if "All" in names or n in names]
        attribute_names = params.get("MessageAttributeNames", [])
        deadline = time.monotonic() + wait
        while True:
            arrived = self.arrived
            messages = backend.receive_message(queue_name, count, 0, visibility, attribute_names)
            left = deadline - time.monotonic()
            if messages or left <= 0:
                break
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(arrived.wait(), min(POLL_SECONDS, left))
        return {"Messages": [_received(m, wanted) for m in messages]} if messages else {}

    async def _delete_message_batch(self, backend: Any, queue: str, params: dict) -> dict:
        entries = params.get("Entries") or []
        handles = [e["ReceiptHandle"] for e in entries]
        if not entries or len(set(handles)) != len(handles):
            raise _NotFast
        success, failed = backend.delete_message_batch(queue, entries)
        return {"Successful": [{"Id": i} for i in success], "Failed": failed}

    async def _get_queue_attributes(self, backend: Any, queue: str, params: dict) -> dict:
        names = params.get("AttributeNames", [])
        if "" in names:
            raise _NotFast
        attributes = backend.get_queue_attributes(queue, names)
        found = {k: str(v) for k, v in attributes.items() if v is not None}
        return {"Attributes": found} if found else {}

    # --- everything else: moto's own application ------------------------------------------

    def _wsgi(self, request: HttpRequest) -> Reply:
        from werkzeug.test import EnvironBuilder

        host = request.headers.get("host", "127.0.0.1")
        target = urlsplit(request.target)
        headers = [(k, v) for k, v in request.headers.items() if k != "content-length"]
        environ = EnvironBuilder(
            path=target.path or "/",
            query_string=target.query,
            method=request.method,
            headers=headers,
            data=request.body,
            base_url=f"http://{host}",
        ).get_environ()
        started: dict[str, Any] = {}

        def start_response(status: str, response_headers: list[tuple[str, str]], *_: Any) -> Any:
            started["status"], started["headers"] = status, response_headers
            return lambda data: None

        body = b"".join(self.app(environ, start_response))
        return Reply(
            int(started["status"].split(" ", 1)[0]),
            {k.lower(): v for k, v in started["headers"]},
            body,
        )


def _received(message: Any, wanted: list[str]) -> dict[str, Any]:
    """One message of a ReceiveMessage answer, as moto's responses module builds it."""
    out: dict[str, Any] = {
        "MessageId": message.id,
        "ReceiptHandle": message.receipt_handle,
        "MD5OfBody": message.body_md5,
        "Body": message.body,
    }
    if message.message_attributes:
        out["MessageAttributes"] = message.message_attributes
        out["MD5OfMessageAttributes"] = message.attribute_md5
    values = {
        "SenderId": message.sender_id,
        "SentTimestamp": str(message.sent_timestamp),
        "ApproximateReceiveCount": str(message.approximate_receive_count),
        "ApproximateFirstReceiveTimestamp": str(message.approximate_first_receive_timestamp),
        "MessageDeduplicationId": message.deduplication_id,
        "MessageGroupId": message.group_id,
        "AWSTraceHeader": ((message.system_attributes or {}).get("AWSTraceHeader") or {}).get(
            "StringValue"
        ),
        "SequenceNumber": message.sequence_number,
    }
    if wanted:
        out["Attributes"] = {name: values[name] for name in wanted if values[name] is not None}
    return out


async def serve(port: int) -> None:
    endpoint = SqsEndpoint()
    server = HttpServer(endpoint.answer, max_body=1 << 20)
    _, bound = await server.start("127.0.0.1", port)
    print(f"listening on {bound}", flush=True)
    await asyncio.Event().wait()


def main(argv: list[str]) -> int:
    patch_moto()
    port = int(argv[1]) if len(argv) > 1 else 0
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve(port))
    else:
        uvloop.run(serve(port))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
