"""The API as the local gateway serves it, called in this process, and the queue delivered
to the persister as the event source would deliver it."""

from __future__ import annotations

import os
from typing import Any

from devstack.servers import LocalSQS


class InProcessApi:
    """The API exactly as the local gateway serves it (template routes, JWT authorizer,
    payload-2.0 events), with the handlers called in this process."""

    SECRET = "test-secret-not-used-anywhere-else"

    def __init__(self, local_env: dict[str, str]) -> None:
        from devstack.gateway import LocalApi
        from devstack.runtime import load_handler, make_context
        from devstack.template import load

        template = load()
        # Each handler reads its configuration at import, as at a cold start; the variables
        # are then taken away again, so that nothing this session starts later (a local
        # stack, `make invoke`) inherits them: a stack that found JWT_SECRET here would sign
        # and check with the wrong secret.
        saved = dict(os.environ)
        try:
            for spec in template.functions.values():
                os.environ.update(spec.resolved_environment(local_env))
            handlers = {name: load_handler(spec) for name, spec in template.functions.items()}
        finally:
            os.environ.clear()
            os.environ.update(saved)
        self.template = template

        def invoke(function: str, event: dict[str, Any]) -> Any:
            return handlers[function](event, make_context(template.functions[function]))

        self.api = LocalApi(template, invoke, self.SECRET)

    def token(self, sub: str, scopes: str = "") -> str:
        from devstack import tokens

        return tokens.mint(self.SECRET, sub, scopes)

    def call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        raw: bytes | None = None,
        contract: bool = True,
    ) -> Any:
        """The gateway's reply; unless `contract` is False, a reply docs/openapi.json does not
        describe (status, headers, body) fails the calling test (support/openapi_contract.py)."""
        import json as _json

        from tests.support.openapi_contract import check_reply

        sent = dict(headers or {})
        if token:
            sent["authorization"] = f"Bearer {token}"
        payload = raw if raw is not None else (b"" if body is None else _json.dumps(body).encode())
        if payload:
            sent.setdefault("content-type", "application/json")
        reply = self.api.handle(method, path, sent, payload)
        if contract:
            check_reply(self.template, method, path, reply)
        return reply


def drain_queue(sqs: LocalSQS, queue_url: str, invoke: Any) -> int:
    """Deliver everything in the queue to the persister the way the event source would."""
    from devstack.queue_consumer import sqs_record

    client = sqs.client()
    arn = client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    delivered = 0
    while True:
        messages = client.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
        ).get("Messages", [])
        if not messages:
            return delivered
        response = invoke({"Records": [sqs_record(m, arn, "us-east-1") for m in messages]})
        failed = {f["itemIdentifier"] for f in response.get("batchItemFailures", [])}
        for message in messages:
            if message["MessageId"] not in failed:
                client.delete_message(QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"])
                delivered += 1
