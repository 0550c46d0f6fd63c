"""The webhook delivery function end to end on local parts (issue 24, acceptance 4): messages on
the real local SQS (with its redrive policy), the handler as Lambda calls it, real HTTP to a real
receiver that verifies signatures with the documented recipe."""

from __future__ import annotations

import importlib.util
import json
import sys
import uuid

import pytest

from devstack.queue_consumer import sqs_record
from devstack.runtime import make_context
from devstack.template import load
from devstack.webhook_receiver import LocalWebhookReceiver
from leaderboard.domain.period_events import PeriodEnded
from leaderboard.domain.periods import parse_period_id

SECRET = "local-webhook-secret-for-tests"
SPEC = load().functions["WebhookDeliveryFunction"]
MAX_RECEIVES = 3


@pytest.fixture(scope="module")
def receiver():
    with LocalWebhookReceiver(SECRET.encode()) as server:
        yield server


@pytest.fixture(scope="module")
def queues(sqs):
    name = f"webhooks-{uuid.uuid4().hex[:8]}"
    url = sqs.create_queue(name, dlq_name=f"{name}-dlq", max_receive_count=MAX_RECEIVES)
    return url, url.rsplit("/", 1)[0] + f"/{name}-dlq"


@pytest.fixture(scope="module")
def app(sqs, queues, receiver):
    """The handler module, imported with this module's configuration (its own copy)."""
    env = {
        "WEBHOOK_URL": receiver.url,
        "WEBHOOK_SECRET": SECRET,
        "WEBHOOK_QUEUE_URL": queues[0],
        "WEBHOOK_DLQ_URL": queues[1],
        "WEBHOOK_TIMEOUT_MS": "300",
        "WEBHOOK_RETRY_BASE_SECONDS": "0",  # a retry is visible again at once
        "SQS_ENDPOINT_URL": sqs.endpoint_url,
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_SERVICE_NAME": "leaderboard-webhooks",
    }
    env = {**SPEC.resolved_environment(env), **env}  # the template's, as the local stack's
    with pytest.MonkeyPatch.context() as patch:
        for key, value in env.items():
            patch.setenv(key, value)
        name = f"webhook_delivery_under_test_{uuid.uuid4().hex[:6]}"
        spec = importlib.util.spec_from_file_location(name, SPEC.code_dir / "app.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        yield module
        del sys.modules[name]


def event_message(board: str) -> tuple[str, str]:
    """An EventBridge event as the rule puts it on the queue, and its envelope's id."""
    event = PeriodEnded.build(
        board, parse_period_id("2026-W47"), reason="schedule", total=0, entries=[]
    )
    body = {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "period.ended",
        "source": "leaderboard",
        "account": "000000000000",
        "time": event.time,
        "region": "us-east-1",
        "resources": [],
        "detail": json.loads(event.to_json()),
    }
    return json.dumps(body), event.event_id


def pump(app, sqs, queue_url: str) -> list[dict]:
    """One poll of the queue as the event source does it: receive, invoke, delete successes.
    The handler's answers (empty when nothing was received)."""
    client = sqs.client()
    arn = client.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])[
        "Attributes"
    ]["QueueArn"]
    messages = client.receive_message(
        QueueUrl=queue_url, MaxNumberOfMessages=10, AttributeNames=["All"]
    ).get("Messages", [])
    if not messages:
        return []
    event = {"Records": [sqs_record(m, arn, "us-east-1") for m in messages]}
    answer = app.lambda_handler(event, make_context(SPEC))
    failed = {f["itemIdentifier"] for f in answer["batchItemFailures"]}
    for m in messages:
        if m["MessageId"] not in failed:
            client.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
    return [answer]


def deliveries_of(receiver, event_id):
    return [r for r in receiver.receiver.received if r.event_id == event_id]


def send(sqs, queue_url, body):
    sqs.client().send_message(QueueUrl=queue_url, MessageBody=body)


def drain(sqs, url):
    client = sqs.client()
    bodies = []
    while True:
        got = client.receive_message(QueueUrl=url, MaxNumberOfMessages=10, AttributeNames=["All"])
        if not got.get("Messages"):
            return bodies
        for m in got["Messages"]:
            bodies.append(m)
            client.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])


def test_a_2xx_is_delivered_once_signed_and_the_message_is_gone(app, sqs, queues, receiver):
    body, event_id = event_message("ok-board")
    send(sqs, queues[0], body)
    (answer,) = pump(app, sqs, queues[0])
    assert answer == {"batchItemFailures": []}
    (got,) = deliveries_of(receiver, event_id)
    assert got.verified and got.answered == 204 and got.attempt == "1"
    assert json.loads(got.body) == json.loads(body)["detail"]
    assert pump(app, sqs, queues[0]) == []


def test_a_5xx_is_retried_and_then_delivered(app, sqs, queues, receiver):
    body, event_id = event_message("flaky-board")
    receiver.receiver.respond(503)
    send(sqs, queues[0], body)
    (first,) = pump(app, sqs, queues[0])
    assert len(first["batchItemFailures"]) == 1
    (second,) = pump(app, sqs, queues[0])
    assert second == {"batchItemFailures": []}
    attempts = deliveries_of(receiver, event_id)
    assert [(r.answered, r.attempt) for r in attempts] == [(503, "1"), (204, "2")]
    assert all(r.verified for r in attempts)


def test_a_timeout_is_retried(app, sqs, queues, receiver):
    body, event_id = event_message("slow-board")
    receiver.receiver.respond((204, 1.5))  # longer than WEBHOOK_TIMEOUT_MS (300 ms)
    send(sqs, queues[0], body)
    (first,) = pump(app, sqs, queues[0])
    assert len(first["batchItemFailures"]) == 1
    (second,) = pump(app, sqs, queues[0])
    assert second == {"batchItemFailures": []}
    assert [r.attempt for r in deliveries_of(receiver, event_id)] == ["1", "2"]


def test_after_the_redrive_limit_the_event_waits_in_the_dead_letter_queue(
    app, sqs, queues, receiver
):
    body, event_id = event_message("down-board")
    receiver.receiver.respond(*[500] * MAX_RECEIVES)
    send(sqs, queues[0], body)
    for _ in range(MAX_RECEIVES):
        (answer,) = pump(app, sqs, queues[0])
        assert len(answer["batchItemFailures"]) == 1
    assert pump(app, sqs, queues[0]) == []  # the queue's redrive moved it on this receive
    (dead,) = drain(sqs, queues[1])
    assert dead["Body"] == body  # as it was: a redrive sends it again unchanged
    assert [r.answered for r in deliveries_of(receiver, event_id)] == [500] * MAX_RECEIVES


def test_a_refusal_goes_to_the_dead_letter_queue_at_once(app, sqs, queues, receiver):
    body, event_id = event_message("gone-board")
    receiver.receiver.respond(410)
    send(sqs, queues[0], body)
    (answer,) = pump(app, sqs, queues[0])
    assert answer == {"batchItemFailures": []}  # handled: not offered again
    assert pump(app, sqs, queues[0]) == []
    client = sqs.client()
    got = client.receive_message(
        QueueUrl=queues[1], MaxNumberOfMessages=10, MessageAttributeNames=["All"]
    )["Messages"]
    (dead,) = [m for m in got if m["Body"] == body]
    assert dead["MessageAttributes"]["status"]["StringValue"] == "410"
    client.delete_message(QueueUrl=queues[1], ReceiptHandle=dead["ReceiptHandle"])
    assert len(deliveries_of(receiver, event_id)) == 1


def test_a_message_that_is_no_event_is_dead_lettered_without_a_call(app, sqs, queues, receiver):
    before = len(receiver.receiver.received)
    send(sqs, queues[0], '{"detail-type": "something.else"}')
    (answer,) = pump(app, sqs, queues[0])
    assert answer == {"batchItemFailures": []}
    assert len(receiver.receiver.received) == before
    assert [m["Body"] for m in drain(sqs, queues[1])] == ['{"detail-type": "something.else"}']


def test_a_duplicate_delivery_carries_the_same_event_id(app, sqs, queues, receiver):
    """SQS and EventBridge deliver at least once: the receiver recognises the second copy by
    its Leaderboard-Event-Id (and the body is byte for byte the same)."""
    body, event_id = event_message("twice-board")
    send(sqs, queues[0], body)
    send(sqs, queues[0], body)
    while pump(app, sqs, queues[0]):
        pass
    first, second = deliveries_of(receiver, event_id)
    assert first.headers["leaderboard-event-id"] == second.headers["leaderboard-event-id"]
    assert first.body == second.body
    assert (first.duplicate, second.duplicate) == (False, True)


def test_a_retry_waits_the_backoff_before_it_is_offered_again(
    app, sqs, queues, receiver, monkeypatch
):
    monkeypatch.setattr(app.delivery, "retry_base_seconds", 10)
    body, _ = event_message("backoff-board")
    receiver.receiver.respond(502)
    send(sqs, queues[0], body)
    (answer,) = pump(app, sqs, queues[0])
    assert len(answer["batchItemFailures"]) == 1
    client = sqs.client()
    attributes = client.get_queue_attributes(QueueUrl=queues[0], AttributeNames=["All"])
    assert attributes["Attributes"]["ApproximateNumberOfMessagesNotVisible"] == "1"
    assert pump(app, sqs, queues[0]) == []  # hidden for 10 s, not offered at once
    client.purge_queue(QueueUrl=queues[0])
