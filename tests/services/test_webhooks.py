"""Webhook delivery decisions (issue 24): what each answer means, the backoff, and the request a
receiver gets, over real HTTP to a real local receiver (devstack/webhook_receiver.py)."""

from __future__ import annotations

import json
import time

import pytest

from devstack.webhook_receiver import LocalWebhookReceiver
from leaderboard.domain.period_events import PeriodEnded, verify
from leaderboard.domain.periods import parse_period_id
from leaderboard.services.webhooks import (
    NotAnEvent,
    Outcome,
    WebhookDelivery,
    backoff_seconds,
    classify,
    envelope_of,
)
from leaderboard.stores.aws.webhook_sender import UrllibTransport

SECRET = b"a-test-secret-of-some-length"
ENVELOPE = json.loads(
    PeriodEnded.build(
        "arena", parse_period_id("2026-W47"), reason="schedule", total=0, entries=[]
    ).to_json()
)


@pytest.mark.parametrize(
    ("status", "outcome"),
    [
        (200, Outcome.DELIVERED),
        (202, Outcome.DELIVERED),
        (204, Outcome.DELIVERED),
        (None, Outcome.RETRY),  # timeout, connection refused or reset
        (500, Outcome.RETRY),
        (502, Outcome.RETRY),
        (503, Outcome.RETRY),
        (408, Outcome.RETRY),
        (429, Outcome.RETRY),
        (400, Outcome.PERMANENT),
        (401, Outcome.PERMANENT),
        (404, Outcome.PERMANENT),
        (410, Outcome.PERMANENT),
        (301, Outcome.PERMANENT),  # never followed: the signed body stays with its receiver
        (100, Outcome.PERMANENT),
    ],
)
def test_what_an_answer_means(status, outcome):
    assert classify(status) is outcome


def test_backoff_doubles_from_ten_seconds_up_to_fifteen_minutes():
    assert [backoff_seconds(n) for n in range(1, 10)] == [10, 20, 40, 80, 160, 320, 640, 900, 900]
    assert backoff_seconds(0) == 10 and backoff_seconds(10_000) == 900
    assert backoff_seconds(3, base=1, cap=60) == 4
    assert backoff_seconds(5, base=0) == 0


def test_the_envelope_is_the_eventbridge_events_detail():
    message = {"version": "0", "id": "x", "detail-type": "period.ended", "detail": ENVELOPE}
    assert envelope_of(json.dumps(message)) == ENVELOPE
    as_text = {**message, "detail": json.dumps(ENVELOPE)}
    assert envelope_of(json.dumps(as_text)) == ENVELOPE
    for poison in (
        "not json",
        json.dumps([1]),
        json.dumps({**message, "detail-type": "other"}),
        json.dumps({**message, "detail": {"id": 5, "type": "period.ended"}}),
        json.dumps({**message, "detail": "{broken"}),
    ):
        with pytest.raises(NotAnEvent):
            envelope_of(poison)


@pytest.fixture
def receiver():
    with LocalWebhookReceiver(SECRET) as server:
        yield server


def delivery(url, timeout_s=2.0):
    return WebhookDelivery(UrllibTransport(), url, lambda: SECRET, timeout_s=timeout_s)


def test_a_delivery_is_signed_and_verifies_with_the_documented_recipe(receiver):
    attempt = delivery(receiver.url).deliver(ENVELOPE, attempt=1, now=1_900_000_000)
    # the receiver's clock is now, so that timestamp is stale for it: 401, permanent
    assert attempt.outcome is Outcome.PERMANENT and attempt.status == 401
    now = int(time.time())
    attempt = delivery(receiver.url).deliver(ENVELOPE, attempt=2, now=now)
    assert attempt.outcome is Outcome.DELIVERED and attempt.status == 204
    got = receiver.receiver.received[-1]
    assert got.verified and got.event_id == ENVELOPE["id"] and got.attempt == "2"
    assert got.headers["content-type"] == "application/json"
    assert json.loads(got.body) == ENVELOPE
    assert verify(
        SECRET,
        got.headers["leaderboard-timestamp"],
        got.headers["leaderboard-signature"],
        got.body,
        now=now,
    )


def test_server_errors_and_throttling_are_retried_with_backoff(receiver):
    receiver.receiver.respond(503, 429, 408, 500)
    for n, status in enumerate((503, 429, 408, 500), start=1):
        attempt = delivery(receiver.url).deliver(ENVELOPE, attempt=n, now=int(time.time()))
        assert (attempt.outcome, attempt.status) == (Outcome.RETRY, status)
        assert attempt.retry_in_seconds == 10 * 2 ** (n - 1)


def test_a_refusal_is_permanent(receiver):
    receiver.receiver.respond(404)
    attempt = delivery(receiver.url).deliver(ENVELOPE, attempt=1, now=int(time.time()))
    assert (attempt.outcome, attempt.status, attempt.retry_in_seconds) == (
        Outcome.PERMANENT,
        404,
        None,
    )


def test_a_timeout_and_a_closed_port_are_retried(receiver):
    receiver.receiver.respond((204, 1.0))  # answers after the client gave up
    attempt = delivery(receiver.url, timeout_s=0.2).deliver(ENVELOPE, 1, int(time.time()))
    assert attempt.outcome is Outcome.RETRY and attempt.status is None
    assert "timed out" in attempt.detail
    from devstack.servers import free_port

    closed = f"http://127.0.0.1:{free_port()}/hook"
    attempt = delivery(closed).deliver(ENVELOPE, 3, int(time.time()))
    assert attempt.outcome is Outcome.RETRY and attempt.retry_in_seconds == 40
