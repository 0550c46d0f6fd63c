"""The local AppSync Events stand-in (devstack.live_server), driven as a client of AWS would
drive it: a real process, real sockets, the `websockets` client, and HTTP publishes."""

from __future__ import annotations

import asyncio
import base64
import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from devstack.servers import LocalEventApi

pytestmark = pytest.mark.server  # the module starts its own event API process

API_KEY = "da2-localtestkey"
PROTOCOL = "aws-appsync-event-ws"
KA_SECONDS = 0.2


@pytest.fixture(scope="module")
def live() -> Iterator[LocalEventApi]:
    """Our own server (keep-alives every KA_SECONDS); conftest's `event_api` keeps the default."""
    with LocalEventApi(api_key=API_KEY, ka_interval=KA_SECONDS) as server:
        yield server


def header(key: str | None = API_KEY) -> str:
    payload: dict[str, str] = {"host": "127.0.0.1"}
    if key is not None:
        payload["x-api-key"] = key
    encoded = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    return f"header-{encoded}"


def channel() -> str:
    """A channel of this test's own, so tests sharing the server never see each other."""
    return f"/leaderboards/t{uuid.uuid4().hex[:12]}"


async def open_ws(api: LocalEventApi, key: str | None = API_KEY, **kwargs: Any) -> ClientConnection:
    ws = await connect(api.realtime_url, subprotocols=[PROTOCOL, header(key)], **kwargs)
    await ws.send(json.dumps({"type": "connection_init"}))
    ack = await next_message(ws)
    assert ack == {"type": "connection_ack", "connectionTimeoutMs": 300000}
    return ws


async def next_message(ws: ClientConnection, skip_ka: bool = True) -> dict[str, Any]:
    """The next message, keep-alives skipped (they arrive every KA_SECONDS)."""
    while True:
        message = json.loads(await asyncio.wait_for(ws.recv(), 5))
        if not (skip_ka and message == {"type": "ka"}):
            return message


async def subscribe(
    ws: ClientConnection, sub_id: str, name: str, key: str = API_KEY
) -> dict[str, Any]:
    auth = {"x-api-key": key, "host": "127.0.0.1"}
    message = {"type": "subscribe", "id": sub_id, "channel": name, "authorization": auth}
    await ws.send(json.dumps(message))
    return await next_message(ws)


def post(api: LocalEventApi, body: Any, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    """POST /event: signed as the publisher signs unless `headers` says otherwise."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    sent = api.signed_headers(data) if headers is None else headers
    request = urllib.request.Request(api.publish_url, data, sent)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


async def publish(api: LocalEventApi, name: str, events: list[str]) -> None:
    answer = await asyncio.to_thread(api.publish, name, events)
    assert [s["index"] for s in answer["successful"]] == list(range(len(events)))
    assert answer["failed"] == []


# --------------------------------------------------------------------------------------
# connecting
# --------------------------------------------------------------------------------------


def test_handshake_needs_the_appsync_subprotocol_and_path(live):
    async def scenario():
        with pytest.raises(InvalidStatus) as refused:
            await connect(live.realtime_url)
        assert refused.value.response.status_code == 400
        with pytest.raises(InvalidStatus) as refused:
            await connect(live.realtime_url, subprotocols=[header()])
        assert refused.value.response.status_code == 400
        wrong_path = live.realtime_url.replace("/event/realtime", "/graphql")
        with pytest.raises(InvalidStatus) as refused:
            await connect(wrong_path, subprotocols=[PROTOCOL, header()])
        assert refused.value.response.status_code == 404
        async with connect(live.realtime_url, subprotocols=[PROTOCOL, header()]) as ws:
            assert ws.subprotocol == PROTOCOL

    asyncio.run(scenario())


@pytest.mark.parametrize("key", ["da2-wrong", None])
def test_wrong_or_missing_api_key_gets_connection_error_and_close(live, key):
    async def scenario():
        async with connect(live.realtime_url, subprotocols=[PROTOCOL, header(key)]) as ws:
            await ws.send(json.dumps({"type": "connection_init"}))
            message = await next_message(ws)
            assert message["type"] == "connection_error"
            assert message["errors"][0]["errorType"] == "UnauthorizedException"
            with pytest.raises(ConnectionClosed):
                await asyncio.wait_for(ws.recv(), 5)

    asyncio.run(scenario())


def test_ack_then_keep_alives(live):
    async def scenario():
        ws = await open_ws(live)  # asserts the connection_ack and its connectionTimeoutMs
        async with ws:
            started = time.monotonic()
            assert await next_message(ws, skip_ka=False) == {"type": "ka"}
            assert await next_message(ws, skip_ka=False) == {"type": "ka"}
            assert time.monotonic() - started < 10 * KA_SECONDS

    asyncio.run(scenario())


# --------------------------------------------------------------------------------------
# subscribing
# --------------------------------------------------------------------------------------

BAD_CHANNELS = {
    "no leading slash": "leaderboards/b/weekly",
    "namespace only": "/leaderboards",
    "empty segment": "/leaderboards//weekly",
    "trailing slash": "/leaderboards/b/",
    "other namespace": "/default/b/weekly",
    "six segments": "/leaderboards/a/b/c/d/e",
    "six with wildcard": "/leaderboards/a/b/c/d/*",
    "segment of 51": "/leaderboards/" + "a" * 51,
    "underscore": "/leaderboards/a_b",
    "dot": "/leaderboards/a.b",
    "star inside a segment": "/leaderboards/a*",
    "star not last": "/leaderboards/*/weekly",
    "bare star": "/*",
    "not a string": 7,
}


@pytest.mark.parametrize("name", BAD_CHANNELS.values(), ids=BAD_CHANNELS.keys())
def test_subscribe_refuses_bad_channels(live, name):
    async def scenario():
        async with await open_ws(live) as ws:
            answer = await subscribe(ws, "s1", name)
            assert answer["type"] == "subscribe_error"
            assert answer["id"] == "s1"
            assert answer["errors"][0]["errorType"] == "BadRequestException"
            assert answer["errors"][0]["message"]
            # the id stays free: a good channel under it is accepted
            assert await subscribe(ws, "s1", "/leaderboards/b") == {
                "type": "subscribe_success",
                "id": "s1",
            }

    asyncio.run(scenario())


GOOD_CHANNELS = [
    "/leaderboards/b",
    "/leaderboards/*",
    "/leaderboards/a/b/c/d",
    "/leaderboards/a/b/c/*",
    "/leaderboards/" + "Az09-" * 10,
    "/leaderboards/boardUid/all-time/EU",
]


def test_subscribe_accepts_good_channels_and_refuses_a_duplicate_id(live):
    async def scenario():
        async with await open_ws(live) as ws:
            for n, name in enumerate(GOOD_CHANNELS):
                assert await subscribe(ws, f"id-{n}", name) == {
                    "type": "subscribe_success",
                    "id": f"id-{n}",
                }
            duplicate = await subscribe(ws, "id-0", "/leaderboards/other")
            assert duplicate["type"] == "subscribe_error"
            assert duplicate["id"] == "id-0"
            assert "id-0" in duplicate["errors"][0]["message"]

    asyncio.run(scenario())


def test_subscribe_needs_the_api_key_in_its_authorization(live):
    async def scenario():
        async with await open_ws(live) as ws:
            wrong = await subscribe(ws, "w", "/leaderboards/b", key="da2-wrong")
            assert wrong["type"] == "subscribe_error"
            assert wrong["errors"][0]["errorType"] == "UnauthorizedException"
            await ws.send(
                json.dumps({"type": "subscribe", "id": "m", "channel": "/leaderboards/b"})
            )
            missing = await next_message(ws)
            assert missing["type"] == "subscribe_error"
            assert missing["errors"][0]["errorType"] == "UnauthorizedException"

    asyncio.run(scenario())


def test_malformed_client_messages_get_error(live):
    async def scenario():
        async with await open_ws(live) as ws:
            for raw in ("not json", "[1, 2]", '{"id": "x"}', b'{"type": "subscribe"}'):
                await ws.send(raw)
                answer = await next_message(ws)
                assert answer["type"] == "error"
                assert answer["errors"][0]["errorType"] == "BadRequestException"
            await ws.send(json.dumps({"type": "start", "id": "g"}))
            answer = await next_message(ws)
            assert answer["type"] == "error"
            assert answer["errors"][0]["errorType"] == "UnsupportedOperation"
            await ws.send(json.dumps({"type": "subscribe", "channel": "/leaderboards/b"}))
            assert (await next_message(ws))["type"] == "error"
            # the connection is still good
            assert (await subscribe(ws, "ok", "/leaderboards/b"))["type"] == "subscribe_success"

    asyncio.run(scenario())


# --------------------------------------------------------------------------------------
# delivery
# --------------------------------------------------------------------------------------


def test_publish_reaches_exact_and_wildcard_subscribers_only(live):
    base = channel()
    target = f"{base}/weekly"
    events = [json.dumps({"n": 1, "text": 'quote " and \\ and é'}), "42"]

    async def scenario():
        async with await open_ws(live) as one, await open_ws(live) as two:
            subs = {
                "exact": (one, target),
                "board": (one, f"{base}/*"),
                "all": (two, "/leaderboards/*"),
                "sibling": (two, f"{base}/daily"),
                "below": (two, f"{target}/*"),  # strictly below: not the channel itself
            }
            for sub_id, (ws, name) in subs.items():
                assert (await subscribe(ws, sub_id, name))["type"] == "subscribe_success"
            await publish(live, target, events)

            got_one = [await next_message(one) for _ in range(4)]
            assert sorted((m["id"], m["event"]) for m in got_one) == sorted(
                (sub_id, event) for sub_id in ("exact", "board") for event in events
            )
            for sub_id in ("exact", "board"):  # each subscription sees the events in order
                assert [m["event"] for m in got_one if m["id"] == sub_id] == events
            assert all(m["type"] == "data" and set(m) == {"type", "id", "event"} for m in got_one)

            got_two = [await next_message(two) for _ in range(2)]
            assert got_two == [{"type": "data", "id": "all", "event": e} for e in events]
            # "sibling" and "below" got nothing: the next frames are markers sent to them
            await publish(live, f"{base}/daily", ['"d"'])
            await publish(live, f"{target}/EU", ['"r"'])
            markers = [await next_message(two) for _ in range(4)]
            assert sorted((m["id"], m["event"]) for m in markers) == [
                ("all", '"d"'),
                ("all", '"r"'),
                ("below", '"r"'),
                ("sibling", '"d"'),
            ]
            got_one = [await next_message(one) for _ in range(2)]
            assert sorted((m["id"], m["event"]) for m in got_one) == [
                ("board", '"d"'),
                ("board", '"r"'),
            ]

    asyncio.run(scenario())


def test_unsubscribe_stops_delivery(live):
    name = f"{channel()}/weekly"

    async def scenario():
        async with await open_ws(live) as ws:
            assert (await subscribe(ws, "keep", name))["type"] == "subscribe_success"
            assert (await subscribe(ws, "drop", name))["type"] == "subscribe_success"
            await ws.send(json.dumps({"type": "unsubscribe", "id": "drop"}))
            assert await next_message(ws) == {"type": "unsubscribe_success", "id": "drop"}
            await ws.send(json.dumps({"type": "unsubscribe", "id": "drop"}))
            again = await next_message(ws)
            assert again["type"] == "unsubscribe_error"
            assert again["id"] == "drop"
            await publish(live, name, ['"one"', '"two"'])
            got = [await next_message(ws) for _ in range(2)]
            assert got == [{"type": "data", "id": "keep", "event": e} for e in ('"one"', '"two"')]
            # the id is free again once unsubscribed
            assert (await subscribe(ws, "drop", name))["type"] == "subscribe_success"

    asyncio.run(scenario())


def test_fan_out_to_200_subscribers_on_20_connections(live):
    name = f"{channel()}/all-time"
    event = json.dumps({"type": "leaderboard.changed", "top": list(range(50))})

    async def scenario():
        connections = [await open_ws(live) for _ in range(20)]
        try:
            expected = []
            for c, ws in enumerate(connections):
                ids = []
                for s in range(10):
                    sub_id = f"c{c}-s{s}"
                    pattern = name if s % 2 else name.rsplit("/", 1)[0] + "/*"
                    assert (await subscribe(ws, sub_id, pattern))["type"] == "subscribe_success"
                    ids.append(sub_id)
                expected.append(sorted(ids))
            before = (await asyncio.to_thread(live.stats))["delivered"]
            await publish(live, name, [event])

            async def frames(ws: ClientConnection) -> list[str]:
                got = [await next_message(ws) for _ in range(10)]
                assert {m["event"] for m in got} == {event}
                return sorted(m["id"] for m in got)

            assert await asyncio.gather(*(frames(ws) for ws in connections)) == expected
            after = (await asyncio.to_thread(live.stats))["delivered"]
            assert after - before >= 200
        finally:
            await asyncio.gather(*(ws.close() for ws in connections))

    asyncio.run(scenario())


def test_a_client_that_stops_reading_does_not_hold_up_others():
    name = f"{channel()}/weekly"
    big = json.dumps("x" * (200 * 1024))
    batches = 40  # 200 events of 200 KiB: far beyond the stalled client's socket buffers

    async def scenario(api: LocalEventApi) -> None:
        # max_queue=1: the library stops reading the socket once one frame waits unread
        stalled = await open_ws(api, max_queue=1)
        readers = [await open_ws(api, max_size=None) for _ in range(2)]
        for n, ws in enumerate([stalled, *readers]):
            assert (await subscribe(ws, f"s{n}", name))["type"] == "subscribe_success"

        async def read_all(ws: ClientConnection) -> int:
            count = 0
            while count < batches * 5:
                message = await next_message(ws)
                assert message["event"] == big
                count += 1
            return count

        reading = asyncio.gather(*(read_all(ws) for ws in readers))
        for _ in range(batches):
            await publish(api, name, [big] * 5)
        assert await asyncio.wait_for(reading, 20) == [batches * 5] * 2
        # the server let the stalled client go rather than buffer without end
        stats = await asyncio.to_thread(api.stats)
        assert (stats["connections"], stats["subscriptions"]) == (2, 2)
        assert stats["delivered"] < 3 * batches * 5
        for ws in [stalled, *readers]:
            ws.transport.abort()

    with LocalEventApi(api_key=API_KEY) as api:
        asyncio.run(scenario(api))


# --------------------------------------------------------------------------------------
# HTTP publish
# --------------------------------------------------------------------------------------

TOO_BIG = json.dumps("a" * (240 * 1024 - 1))  # 240 KiB + 1 byte of JSON text
MAX_SIZE = json.dumps("a" * (240 * 1024 - 2))  # exactly 240 KiB


PUBLISH = json.dumps({"channel": "/leaderboards/b", "events": ['"x"']}).encode()
SHAPE_ONLY = (  # what the local server used to accept: the form of a signature, no signature
    "AWS4-HMAC-SHA256 Credential=AK/20260101/us-east-1/appsync/aws4_request,"
    " SignedHeaders=content-type;host, Signature=abc"
)


def _unsigned(authorization: str | None) -> dict[str, str]:
    headers = {"content-type": "application/json"}
    if authorization is not None:
        headers["authorization"] = authorization
    return headers


def _signed_by_someone_else(api: LocalEventApi) -> dict[str, str]:
    return api.signed_headers(PUBLISH, (api.publisher_credentials[0], "not-the-secret"))


def _signed_by_an_unknown_key(api: LocalEventApi) -> dict[str, str]:
    return api.signed_headers(PUBLISH, ("AKIDSOMEONEELSE", api.publisher_credentials[1]))


def _signed_then_resigned_date(api: LocalEventApi) -> dict[str, str]:
    headers = api.signed_headers(PUBLISH)
    stamp = headers["X-Amz-Date"]
    return headers | {"X-Amz-Date": stamp[:-3] + ("00Z" if not stamp.endswith("00Z") else "01Z")}


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        (lambda api: _unsigned(None), 401),
        (lambda api: _unsigned("Bearer abc"), 401),
        (lambda api: _unsigned(SHAPE_ONLY), 401),
        (lambda api: _unsigned(SHAPE_ONLY.replace("appsync", "execute-api")), 401),
        (_signed_by_someone_else, 401),
        (_signed_by_an_unknown_key, 401),
        (_signed_then_resigned_date, 401),
        (lambda api: api.signed_headers(PUBLISH), 200),
    ],
    ids=[
        "none",
        "bearer",
        "shape only",
        "other service",
        "wrong secret",
        "unknown key",
        "date changed",
        "the publisher",
    ],
)
def test_publish_needs_the_publishers_sigv4_signature(live, headers, status):
    got, answer = post(live, PUBLISH, headers(live))
    assert got == status, answer
    if status == 401:
        assert answer["errors"][0]["errorType"] == "UnauthorizedException"
    else:
        assert answer["failed"] == []
        assert uuid.UUID(answer["successful"][0]["identifier"])


def test_a_signed_publish_with_a_changed_body_is_refused(live):
    headers = live.signed_headers(PUBLISH)
    tampered = PUBLISH.replace(b"/leaderboards/b", b"/leaderboards/c")
    assert tampered != PUBLISH
    got, answer = post(live, tampered, headers)
    assert got == 401 and "does not match" in answer["errors"][0]["message"]


def test_a_forged_publish_reaches_no_subscriber(live):
    """A message with a huge version, had it been delivered, would make clients following the
    documented gap rules ignore every real update after it."""
    name = f"{channel()}/weekly"
    forged = json.dumps({"type": "leaderboard.changed", "version": 10**12, "top": []})
    body = json.dumps({"channel": name, "events": [forged]}).encode()
    refused_before = live.stats()["refused_publishes"]

    async def scenario():
        async with await open_ws(live) as ws:
            assert (await subscribe(ws, "s", name))["type"] == "subscribe_success"
            key_id = live.publisher_credentials[0]
            for headers in (
                _unsigned(SHAPE_ONLY),
                live.signed_headers(body, (key_id, "a-guessed-secret")),
            ):
                status, _ = await asyncio.to_thread(post, live, body, headers)
                assert status == 401
            await publish(live, name, ['{"version":1}'])
            # the first frame the subscriber gets is the real publish: the forged never came
            assert await next_message(ws) == {"type": "data", "id": "s", "event": '{"version":1}'}

    asyncio.run(scenario())
    assert live.stats()["refused_publishes"] == refused_before + 2
    assert live.stats()["published"].get(name) == 1


BAD_PUBLISHES = {
    "not json": (b"{nope", 400),
    "not an object": ([], 400),
    "no events": ({"channel": "/leaderboards/b"}, 400),
    "zero events": ({"channel": "/leaderboards/b", "events": []}, 400),
    "six events": ({"channel": "/leaderboards/b", "events": ['"e"'] * 6}, 400),
    "event not a string": ({"channel": "/leaderboards/b", "events": [{"a": 1}]}, 400),
    "event not json": ({"channel": "/leaderboards/b", "events": ["{broken"]}, 400),
    "event NaN": ({"channel": "/leaderboards/b", "events": ["NaN"]}, 400),
    "event too big": ({"channel": "/leaderboards/b", "events": ['"ok"', TOO_BIG]}, 413),
    "wildcard channel": ({"channel": "/leaderboards/b/*", "events": ['"e"']}, 400),
    "other namespace": ({"channel": "/default/b", "events": ['"e"']}, 400),
    "no channel": ({"events": ['"e"']}, 400),
    "bad segment": ({"channel": "/leaderboards/b_c", "events": ['"e"']}, 400),
}


@pytest.mark.parametrize(("body", "status"), BAD_PUBLISHES.values(), ids=BAD_PUBLISHES.keys())
def test_publish_refuses_bad_bodies(live, body, status):
    got, answer = post(live, body)
    assert got == status
    expected = "PayloadTooLargeException" if status == 413 else "BadRequestException"
    assert answer["errors"][0]["errorType"] == expected
    assert answer["errors"][0]["message"]


def test_publish_accepts_five_events_up_to_240_kib(live):
    name = channel()
    got, answer = post(live, {"channel": name, "events": [MAX_SIZE, "1", "null", "[]", '"s"']})
    assert got == 200
    assert [s["index"] for s in answer["successful"]] == [0, 1, 2, 3, 4]
    assert len({s["identifier"] for s in answer["successful"]}) == 5
    assert live.stats()["published"][name] == 5


def test_health_and_unknown_routes(live):
    with urllib.request.urlopen(f"{live.http_url}/health", timeout=5) as response:
        assert json.load(response) == {"ok": True}
    for url, status in ((f"{live.http_url}/nope", 404), (live.publish_url, 405)):
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url, timeout=5)
        assert refused.value.code == status


# --------------------------------------------------------------------------------------
# /stats
# --------------------------------------------------------------------------------------


def test_stats_count_connections_subscriptions_and_frames():
    with LocalEventApi(api_key=API_KEY) as api:
        assert api.stats() == {
            "connections": 0,
            "subscriptions": 0,
            "published": {},
            "delivered": 0,
            "refused_publishes": 0,
        }

        async def scenario():
            async with await open_ws(api) as one, await open_ws(api) as two:
                await subscribe(one, "a", "/leaderboards/b/weekly")
                await subscribe(one, "b", "/leaderboards/b/*")
                await subscribe(two, "c", "/leaderboards/b/weekly")
                await subscribe(two, "bad", "/leaderboards/b_")  # refused: not counted
                stats = await asyncio.to_thread(api.stats)
                assert (stats["connections"], stats["subscriptions"]) == (2, 3)
                await publish(api, "/leaderboards/b/weekly", ['"1"', '"2"'])
                await publish(api, "/leaderboards/b/daily", ['"3"'])
                await publish(api, "/leaderboards/nobody", ['"4"'])
                for ws, count in ((one, 5), (two, 2)):
                    for _ in range(count):
                        assert (await next_message(ws))["type"] == "data"
                stats = await asyncio.to_thread(api.stats)
                assert stats["published"] == {
                    "/leaderboards/b/weekly": 2,
                    "/leaderboards/b/daily": 1,
                    "/leaderboards/nobody": 1,
                }
                assert stats["delivered"] == 7
                await one.send(json.dumps({"type": "unsubscribe", "id": "b"}))
                await next_message(one)
                assert (await asyncio.to_thread(api.stats))["subscriptions"] == 2

        asyncio.run(scenario())
        # closed connections take their subscriptions with them
        deadline = time.monotonic() + 5
        while (stats := api.stats())["connections"] and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (stats["connections"], stats["subscriptions"]) == (0, 0)
