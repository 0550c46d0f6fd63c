"""The period.ended sink (issue 24): PutEvents on EventBridge (moto's model of it) and on the
local stand-in of `make run`, which keeps what it took and forwards it to the webhook queue as
the template's rule does."""

from __future__ import annotations

import json
import urllib.request
import uuid

import boto3
import pytest
from moto import mock_aws

from devstack.event_bus import LocalEventBus
from devstack.servers import free_port
from leaderboard.domain.errors import Unavailable
from leaderboard.domain.period_events import PeriodEnded, parse_rewards
from leaderboard.domain.periods import parse_period_id
from leaderboard.services.webhooks import envelope_of
from leaderboard.stores.aws.event_bus import DiscardingSink, EventBridgeSink, sink_from_env

EVENT = PeriodEnded.build(
    "arena",
    parse_period_id("2026-W47"),
    reason="schedule",
    total=0,
    entries=[],
    rewards=parse_rewards({"tiers": [{"name": "winner", "ranks": [1, 1]}]}),
)


@pytest.fixture
def aws(monkeypatch):
    for key, value in {
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(key, value)
    with mock_aws():
        yield


def test_emit_puts_the_envelope_on_the_named_bus(aws):
    events = boto3.client("events")
    events.create_event_bus(Name="leaderboard-test-events")
    sqs = boto3.client("sqs")
    queue = sqs.create_queue(QueueName="seen")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    events.put_rule(
        Name="all",
        EventBusName="leaderboard-test-events",
        EventPattern=json.dumps({"source": ["leaderboard"], "detail-type": ["period.ended"]}),
    )
    events.put_targets(
        Rule="all", EventBusName="leaderboard-test-events", Targets=[{"Id": "q", "Arn": arn}]
    )
    EventBridgeSink("leaderboard-test-events").emit(EVENT)
    (message,) = sqs.receive_message(QueueUrl=queue)["Messages"]
    body = json.loads(message["Body"])
    assert body["source"] == "leaderboard" and body["detail-type"] == "period.ended"
    assert envelope_of(message["Body"]) == json.loads(EVENT.to_json())


def test_a_refused_entry_or_an_unreachable_bus_raises_unavailable(aws):
    class Refusing:
        def put_events(self, Entries):
            return {
                "FailedEntryCount": 1,
                "Entries": [{"ErrorCode": "InternalFailure", "ErrorMessage": "try later"}],
            }

    with pytest.raises(Unavailable, match="InternalFailure"):
        EventBridgeSink("bus", client=Refusing()).emit(EVENT)
    from botocore.config import Config

    client = boto3.client(
        "events",
        endpoint_url=f"http://127.0.0.1:{free_port()}",
        config=Config(retries={"total_max_attempts": 1}),
    )
    nowhere = EventBridgeSink("bus", client=client)
    with pytest.raises(Unavailable, match="unavailable"):
        nowhere.emit(EVENT)


def test_the_client_is_created_once_on_the_first_event(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    sink = EventBridgeSink("bus", endpoint_url="http://127.0.0.1:1")
    assert sink._client is None
    assert sink.client is sink.client


def test_the_sink_comes_from_the_environment(monkeypatch):
    monkeypatch.delenv("EVENT_BUS_NAME", raising=False)
    assert isinstance(sink_from_env(), DiscardingSink)
    monkeypatch.setenv("EVENT_BUS_NAME", "leaderboard-dev-events")
    monkeypatch.setenv("EVENTS_ENDPOINT_URL", "http://127.0.0.1:4010")
    sink = sink_from_env()
    assert isinstance(sink, EventBridgeSink)
    assert (sink.bus_name, sink.endpoint_url) == ("leaderboard-dev-events", "http://127.0.0.1:4010")


# --- the local stand-in -----------------------------------------------------------------------


@pytest.fixture
def local_bus(sqs):
    name = f"hooks-{uuid.uuid4().hex[:8]}"
    queue = sqs.create_queue(name)
    client = sqs.client()
    bus = LocalEventBus(
        "local-test-events",
        forward=lambda body: client.send_message(QueueUrl=queue, MessageBody=body),
    )
    with bus:
        yield bus, queue


def local_sink(bus):
    return EventBridgeSink(
        bus.name,
        client=boto3.client(
            "events",
            endpoint_url=bus.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ),
    )


def test_the_local_bus_keeps_events_and_forwards_period_ended_like_the_rule(local_bus, sqs):
    bus, queue = local_bus
    local_sink(bus).emit(EVENT)
    (kept,) = bus.events
    assert kept["detail"] == json.loads(EVENT.to_json())
    assert (kept["source"], kept["detail-type"], kept["version"]) == (
        "leaderboard",
        "period.ended",
        "0",
    )
    with urllib.request.urlopen(f"{bus.endpoint_url}/events", timeout=5) as reply:
        assert json.load(reply) == [kept]
    (message,) = sqs.client().receive_message(QueueUrl=queue)["Messages"]
    assert json.loads(message["Body"]) == kept
    assert envelope_of(message["Body"]) == json.loads(EVENT.to_json())


def test_the_local_bus_refuses_what_eventbridge_refuses(local_bus, sqs):
    bus, queue = local_bus
    with pytest.raises(Unavailable, match="NotFoundException"):
        EventBridgeSink("no-such-bus", client=local_sink(bus).client).emit(EVENT)
    reply = local_sink(bus).client.put_events(
        Entries=[
            {"EventBusName": bus.name, "Source": "leaderboard", "DetailType": "x", "Detail": "["},
            {"EventBusName": bus.name, "Source": "other", "DetailType": "y", "Detail": "{}"},
        ]
    )
    assert reply["FailedEntryCount"] == 1
    assert reply["Entries"][0]["ErrorCode"] == "MalformedDetail"
    assert "EventId" in reply["Entries"][1]
    assert len(bus.events) == 1  # kept, but not forwarded: the rule matches period.ended only
    assert sqs.client().receive_message(QueueUrl=queue).get("Messages", []) == []
