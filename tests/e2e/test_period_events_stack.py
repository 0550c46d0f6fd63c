"""Period-end events on the local stack, as `make run` wires them (issue 24, acceptance 4): a
period.ended put on the local bus the way the rollover puts it, forwarded to the webhook queue,
delivered by the webhook function in its worker, signed, to the stack's own receiver; verified
here with the recipe docs/API.md gives receivers (written out, not the service's code)."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request

import pytest

from devstack import tokens
from devstack.stack import LocalStack
from leaderboard.domain.period_events import PeriodEnded, parse_rewards
from leaderboard.domain.periods import parse_period_id
from leaderboard.stores.aws.event_bus import EventBridgeSink, sink_from_env

pytestmark = pytest.mark.e2e


@pytest.fixture
def stack(local_stack: LocalStack) -> LocalStack:
    """The worker's stack (tests/e2e/conftest.py): each test on boards of its own."""
    return local_stack


def documented_verify(secret: bytes, headers: dict[str, str], body: bytes, now: float) -> bool:
    """docs/API.md, "Verifying a delivery", in Python."""
    timestamp = headers["leaderboard-timestamp"]
    if abs(now - int(timestamp)) > 300:
        return False
    expected = "v1=" + hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return any(
        hmac.compare_digest(expected, value.strip())
        for value in headers["leaderboard-signature"].split(",")
    )


def rollover_sink(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> EventBridgeSink:
    """The sink the rollover builds from its environment in the stack."""
    env = stack.template.functions["RolloverFunction"].resolved_environment(stack.env)
    for key in ("EVENT_BUS_NAME", "EVENTS_ENDPOINT_URL", "AWS_DEFAULT_REGION"):
        monkeypatch.setenv(key, env[key])
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(key, env[key])
    sink = sink_from_env()
    assert isinstance(sink, EventBridgeSink)
    return sink


def test_a_period_ended_on_the_local_bus_arrives_signed_at_the_receiver(stack, monkeypatch):
    event = PeriodEnded.build(
        "e2e-arena",
        parse_period_id("2026-W47"),
        reason="schedule",
        total=0,
        entries=[],
        rewards=parse_rewards({"top": 3, "tiers": [{"name": "winner", "ranks": [1, 1]}]}),
    )
    sink = rollover_sink(stack, monkeypatch)
    sink.emit(event)
    assert stack.bus is not None and stack.webhooks is not None
    # (the worker's stack: other tests' events may be there too)
    assert [e["detail"]["id"] for e in stack.bus.events].count(event.event_id) == 1

    received = stack.webhooks.wait_for(lambda r: any(x.event_id == event.event_id for x in r))
    (got,) = [r for r in received if r.event_id == event.event_id]
    secret = stack.env["WEBHOOK_SECRET"].encode()
    assert documented_verify(secret, got.headers, got.body, now=time.time())
    assert got.body.decode() == event.to_json()  # the bytes the bus carried, as they were
    assert got.headers["leaderboard-event-id"] == event.event_id and got.verified

    # the rollover re-run after a crash: the same event again, recognisable by its id
    sink.emit(event)
    received = stack.webhooks.wait_for(lambda r: sum(x.event_id == event.event_id for x in r) == 2)
    first, second = [r for r in received if r.event_id == event.event_id]
    assert first.body == second.body and second.duplicate and not first.duplicate

    with urllib.request.urlopen(f"{stack.url}/local/webhook-events", timeout=10) as reply:
        listed = [e for e in json.load(reply)["events"] if e["event_id"] == event.event_id]
    assert len(listed) == 2
    assert all(e["verified"] for e in listed)
    assert listed[0]["event"] == json.loads(event.to_json())


def _http(stack: LocalStack, method: str, path: str, body: object, token: str) -> tuple[int, dict]:
    request = urllib.request.Request(
        stack.url + path,
        data=json.dumps(body).encode(),
        method=method,
        headers={"content-type": "application/json", "authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def test_a_season_ended_over_http_reaches_the_webhook_with_its_winners(stack):
    """Issue 24 end to end: a board of seasons, scores, the season ended by an admin over HTTP,
    the stack's own rollover (its minute's run of due boards) archives it and emits the event,
    which arrives signed with the season's final standings and reward tiers."""
    secret = tokens.local_secret(stack.config.data_dir)
    admin = tokens.mint(secret, "e2e-admin", "leaderboard/admin")
    server = tokens.mint(secret, "e2e-server", "leaderboard/server")
    board = f"season-{int(time.time())}"
    rules = {
        "periods": ["all-time", "custom"],
        "schedule": {"timezone": "Europe/Berlin"},
        "mode": "best",
        "rewards": {"top": 2, "tiers": [{"name": "champion", "ranks": [1, 1]}]},
    }
    assert _http(stack, "PUT", f"/boards/{board}", rules, admin)[0] == 201
    for player, score in (("ada", 30), ("bo", 50), ("cy", 40)):
        status, _ = _http(
            stack, "POST", f"/boards/{board}/scores", {"player_id": player, "score": score}, server
        )
        assert status == 200
    status, ended = _http(stack, "POST", f"/boards/{board}/periods/end", {}, admin)
    assert status == 200, ended
    season = ended["ended"]["period"]
    time.sleep(1.2)  # the end is the next whole second
    stack.invoke("RolloverFunction", {"kinds": ["custom"], "due": True})

    received = stack.webhooks.wait_for(
        lambda r: any(json.loads(x.body)["data"]["board_id"] == board for x in r)
    )
    (got,) = [r for r in received if json.loads(r.body)["data"]["board_id"] == board]
    assert documented_verify(
        stack.env["WEBHOOK_SECRET"].encode(), got.headers, got.body, time.time()
    )
    data = json.loads(got.body)["data"]
    assert (data["reason"], data["period"]["id"]) == ("manual", season)
    assert [(e["rank"], e["player_id"]) for e in data["top"]] == [(1, "bo"), (2, "cy")]
    assert [p["player_id"] for p in data["tiers"][0]["players"]] == ["bo"]
    with urllib.request.urlopen(f"{stack.url}/boards/{board}/periods", timeout=10) as reply:
        periods = {p["period"]: p["status"] for p in json.load(reply)["periods"]}
    assert periods[season] == "archived"
    assert periods[ended["current"]["period"]] == "open"
