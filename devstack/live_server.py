"""`python -m devstack.live_server`: a local stand-in for an AWS AppSync Events API.

The live-updates feature publishes through AppSync Events' HTTP endpoint and browsers subscribe
through its WebSocket endpoint. This process speaks both protocols closely enough that the same
publisher and the same WebSocket client work against AWS and against `make run`:

* `POST /event` on the HTTP port publishes 1-5 events to one channel. It wants an IAM (SigV4)
  `Authorization` header for the `appsync` service, signed with the credentials the local stack
  gives its functions (devstack/sigv4.py checks it as AWS does): only the live publisher can
  publish, and anything else gets 401 UnauthorizedException.
* `/event/realtime` on the WebSocket port speaks the `aws-appsync-event-ws` subprotocol:
  connection_init/ack, ka keep-alives, subscribe/unsubscribe with an API key, data frames.
* Two namespaces, as the template declares: `leaderboards` (subscribe with the API key) and
  `players`, where a subscription carries a bearer token and a player's token may subscribe
  only to its own channel, a server's (or admin's) to any; what the Lambda authorizer and the
  namespace's onSubscribe handler decide in AWS. The token is checked by the local rules
  (JWT_SECRET, JWT_ISSUER, JWT_AUDIENCE in this process's environment; without JWT_SECRET
  nobody may subscribe there).
* `GET /stats` and `GET /health` on the HTTP port are ours, for tests and benchmarks.

Fan-out is the point of the exercise, so it is cheap: subscriptions are indexed by channel and by
wildcard prefix, each event is JSON-encoded once, every frame is a concatenation of bytes, and
each connection gets one write per publish, never awaited. Those data frames are framed here
rather than by `websockets` (one write per frame made a fan-out to 2,000 subscribers about three
times slower); compression is never negotiated, so a text frame is just a short header and the
payload. A client whose unsent frames pile up past `MAX_BUFFERED` bytes is disconnected rather
than slowing everyone else down or eating memory.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import binascii
import contextlib
import errno
import json
import logging
import os
import sys
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from websockets.asyncio.server import ServerConnection, broadcast, serve
from websockets.datastructures import Headers
from websockets.exceptions import ConnectionClosed, NegotiationError
from websockets.http11 import Request, Response
from websockets.protocol import State
from websockets.typing import Subprotocol

from devstack.http11 import HttpRequest, HttpServer, Reply
from devstack.sigv4 import SignatureError, verify

log = logging.getLogger("devstack.live")

NAMESPACE = "leaderboards"
PLAYER_NAMESPACE = "players"
NAMESPACES = (NAMESPACE, PLAYER_NAMESPACE)
SUBPROTOCOL = Subprotocol("aws-appsync-event-ws")
REALTIME_PATH = "/event/realtime"
PUBLISH_PATH = "/event"
MAX_EVENTS = 5
MAX_EVENT_BYTES = 240 * 1024
MAX_SEGMENTS = 5  # including the namespace (and a trailing `*`)
MAX_SEGMENT_CHARS = 50
CONNECTION_TIMEOUT_MS = 300_000
DEFAULT_KA_SECONDS = 60.0
MAX_BUFFERED = 8 << 20  # unsent bytes a client may fall behind by before it is dropped
MAX_MESSAGE = 256 << 10  # largest client message over the WebSocket
# Escaped as JSON strings inside the publish body, five maximal events can take about 6x their
# size; anything beyond that cannot be a valid publish.
MAX_BODY = 8 << 20
_SEGMENT_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-")
_KA = b'{"type":"ka"}'
BAD_REQUEST = "BadRequestException"
UNAUTHORIZED = "UnauthorizedException"


class ChannelError(ValueError):
    """A channel name AppSync Events would refuse."""


def parse_channel(name: object, *, wildcard: bool) -> tuple[str, bool]:
    """Check a channel (or, with `wildcard`, a subscription's channel pattern).

    Returns the channel, or for a pattern ending in `/*` its prefix, and whether it was a
    wildcard. Raises ChannelError saying what is wrong.
    """
    if not isinstance(name, str) or not name.startswith("/"):
        raise ChannelError("a channel is a string starting with '/'")
    segments = name[1:].split("/")
    if len(segments) > MAX_SEGMENTS:
        raise ChannelError(f"a channel has at most {MAX_SEGMENTS} segments")
    is_wildcard = wildcard and len(segments) > 1 and segments[-1] == "*"
    plain = segments[:-1] if is_wildcard else segments
    for segment in plain:
        if not segment:
            raise ChannelError("a channel segment cannot be empty")
        if len(segment) > MAX_SEGMENT_CHARS:
            raise ChannelError(f"a channel segment has at most {MAX_SEGMENT_CHARS} characters")
        if not _SEGMENT_CHARS.issuperset(segment):
            if "*" in segment and wildcard:
                raise ChannelError("'*' may only be the whole last segment")
            raise ChannelError("channel segments may only hold [A-Za-z0-9-]")
    if plain[0] not in NAMESPACES:
        raise ChannelError(f"namespace {plain[0]!r} does not exist (only {', '.join(NAMESPACES)})")
    if len(segments) < 2:
        raise ChannelError("a channel needs a segment below its namespace")
    if is_wildcard:
        return "/" + "/".join(plain), True
    return name, False


def _prefixes(channel: str) -> Iterable[str]:
    """The wildcard prefixes that match `channel`: each strict ancestor of it."""
    cut = channel.rfind("/")
    while cut > 0:
        channel = channel[:cut]
        yield channel
        cut = channel.rfind("/")


def _text_frame(payload: bytes) -> bytes:
    """One unfragmented, unmasked, uncompressed WebSocket text frame (RFC 6455 5.2)."""
    size = len(payload)
    if size < 126:
        return bytes((0x81, size)) + payload
    if size < 1 << 16:
        return b"\x81\x7e" + size.to_bytes(2, "big") + payload
    return b"\x81\x7f" + size.to_bytes(8, "big") + payload


def _error(error_type: str, message: str) -> dict[str, str]:
    return {"errorType": error_type, "message": message}


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _strict_json(text: str) -> None:
    """Parse `text` as JSON, refusing NaN and Infinity (Python accepts them, JSON does not)."""

    def refuse(constant: str) -> None:
        raise ValueError(f"{constant} is not JSON")

    json.loads(text, parse_constant=refuse)


@dataclass(eq=False, slots=True)
class _Subscription:
    id: str
    key: str  # the channel, or a wildcard's prefix
    wildcard: bool
    client: _Client
    head: bytes  # b'{"type":"data","id":"<id>","event":'


@dataclass(eq=False, slots=True)
class _Client:
    ws: ServerConnection
    api_key: str | None  # from the `header-` subprotocol
    ready: bool = False
    subscriptions: dict[str, _Subscription] = field(default_factory=dict)


def _header_api_key(offered: Sequence[str]) -> str | None:
    """The `x-api-key` of the `header-<base64url JSON>` subprotocol, if there is one."""
    for protocol in offered:
        if not protocol.startswith("header-"):
            continue
        encoded = protocol[len("header-") :]
        try:
            raw = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            value = json.loads(raw)
        except (binascii.Error, ValueError):
            return None
        key = value.get("x-api-key") if isinstance(value, dict) else None
        return key if isinstance(key, str) else None
    return None


def _offered(headers: Headers) -> list[str]:
    return [
        item.strip()
        for value in headers.get_all("Sec-WebSocket-Protocol")
        for item in value.split(",")
        if item.strip()
    ]


class EventApi:
    """The channels, their subscribers and both endpoints' handlers."""

    def __init__(
        self,
        api_key: str,
        ka_interval: float = DEFAULT_KA_SECONDS,
        *,
        publisher: tuple[str, str] = ("", ""),
        players: Callable[[str, str, bool], str | None] | None = None,
    ) -> None:
        self.api_key = api_key
        # (Authorization value, channel or wildcard prefix, wildcard) -> why refused, or None
        self.players = players
        self.publisher = publisher  # the (access key id, secret) a publish must be signed with
        self.refused_publishes = 0
        self.ka_interval = ka_interval
        self.clients: set[_Client] = set()
        self.exact: dict[str, set[_Subscription]] = {}
        self.prefixed: dict[str, set[_Subscription]] = {}
        self.subscriptions = 0
        self.published: dict[str, int] = {}
        self.delivered = 0

    # fan-out
    def publish(self, channel: str, events: Sequence[str]) -> None:
        """Send each event to every subscription matching `channel`, without waiting."""
        self.published[channel] = self.published.get(channel, 0) + len(events)
        targets: list[_Subscription] = list(self.exact.get(channel, ()))
        for prefix in _prefixes(channel):
            targets.extend(self.prefixed.get(prefix, ()))
        if not targets:
            return
        tails = [json.dumps(event).encode() + b"}" for event in events]
        by_client: dict[_Client, list[bytes]] = {}
        for subscription in targets:
            by_client.setdefault(subscription.client, []).append(subscription.head)
        for client, heads in by_client.items():
            ws = client.ws
            if ws.protocol.state is not State.OPEN:
                continue
            if ws.transport.get_write_buffer_size() > MAX_BUFFERED:
                if not ws.transport.is_closing():
                    log.warning("dropping a client %s bytes behind", MAX_BUFFERED)
                    ws.transport.abort()
                continue
            frames = [_text_frame(head + tail) for tail in tails for head in heads]
            ws.transport.write(b"".join(frames))
            self.delivered += len(frames)

    def _add(self, subscription: _Subscription) -> None:
        index = self.prefixed if subscription.wildcard else self.exact
        index.setdefault(subscription.key, set()).add(subscription)
        subscription.client.subscriptions[subscription.id] = subscription
        self.subscriptions += 1

    def _remove(self, subscription: _Subscription) -> None:
        index = self.prefixed if subscription.wildcard else self.exact
        bucket = index.get(subscription.key)
        if bucket is not None:
            bucket.discard(subscription)
            if not bucket:
                del index[subscription.key]
        del subscription.client.subscriptions[subscription.id]
        self.subscriptions -= 1

    async def keep_alive(self) -> None:
        """Send `ka` to every initialised connection each `ka_interval` seconds."""
        while True:
            await asyncio.sleep(self.ka_interval)
            broadcast([c.ws for c in self.clients if c.ready], _KA, text=True)

    def stats(self) -> dict[str, Any]:
        return {
            "connections": len(self.clients),
            "subscriptions": self.subscriptions,
            "published": dict(self.published),
            "delivered": self.delivered,
            "refused_publishes": self.refused_publishes,
        }

    # WebSocket
    @staticmethod
    def select_subprotocol(
        ws: ServerConnection, offered: Sequence[Subprotocol]
    ) -> Subprotocol | None:
        if SUBPROTOCOL in offered:
            return SUBPROTOCOL
        raise NegotiationError(f"the {SUBPROTOCOL} subprotocol is required")

    @staticmethod
    def process_request(ws: ServerConnection, request: Request) -> Response | None:
        if request.path.split("?", 1)[0] != REALTIME_PATH:
            return ws.respond(404, f"WebSocket connections go to {REALTIME_PATH}\n")
        return None

    async def handle(self, ws: ServerConnection) -> None:
        """One WebSocket connection, from handshake to close."""
        client = _Client(ws, _header_api_key(_offered(ws.request.headers)) if ws.request else None)
        self.clients.add(client)
        try:
            async for message in ws:
                if not await self._on_message(client, message):
                    break
        except ConnectionClosed:
            pass
        finally:
            self.clients.discard(client)
            for subscription in list(client.subscriptions.values()):
                self._remove(subscription)

    async def _send(self, client: _Client, message: dict[str, Any]) -> None:
        with contextlib.suppress(ConnectionClosed):
            await client.ws.send(_json_bytes(message), text=True)

    async def _fail(
        self, client: _Client, kind: str, error_type: str, text: str, sub_id: object = None
    ) -> None:
        """Send a `kind` message (error, subscribe_error, ...) carrying one error."""
        message: dict[str, Any] = {"type": kind}
        if sub_id is not None:
            message["id"] = sub_id
        message["errors"] = [_error(error_type, text)]
        await self._send(client, message)

    async def _on_message(self, client: _Client, raw: str | bytes) -> bool:
        """Answer one client message; False closes the connection."""
        try:
            message = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            message = None
        kind = message.get("type") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not isinstance(kind, str):
            await self._fail(client, "error", BAD_REQUEST, "a message is a JSON text object")
            return True
        if not client.ready:
            if client.api_key != self.api_key:
                await self._fail(
                    client, "connection_error", UNAUTHORIZED, "missing or invalid API key"
                )
                await client.ws.close(1008, "unauthorized")
                return False
            client.ready = True  # connection_init is optional, as on AWS
        sub_id = message.get("id")
        if kind == "connection_init":
            ack = {"type": "connection_ack", "connectionTimeoutMs": CONNECTION_TIMEOUT_MS}
            await self._send(client, ack)
        elif kind == "subscribe":
            await self._subscribe(client, message)
        elif kind == "unsubscribe":
            await self._unsubscribe(client, sub_id)
        elif kind == "publish":
            text = "publishing needs IAM authorization: use POST /event"
            await self._fail(client, "publish_error", UNAUTHORIZED, text, sub_id)
        else:
            text = f"unsupported message type {kind!r}"
            await self._fail(client, "error", "UnsupportedOperation", text, sub_id)
        return True

    async def _subscribe(self, client: _Client, message: dict[str, Any]) -> None:
        sub_id = message.get("id")
        if not isinstance(sub_id, str) or not sub_id:
            await self._fail(client, "error", BAD_REQUEST, "subscribe needs a string id")
            return
        auth = message.get("authorization")
        try:
            key, wildcard = parse_channel(message.get("channel"), wildcard=True)
        except ChannelError as exc:
            await self._fail(client, "subscribe_error", BAD_REQUEST, str(exc), sub_id)
            return
        refused = self._refused(auth, key, wildcard)
        if refused is not None:
            await self._fail(client, "subscribe_error", UNAUTHORIZED, refused, sub_id)
            return
        if sub_id in client.subscriptions:
            text = f"subscription id {sub_id!r} is already in use"
            await self._fail(client, "subscribe_error", BAD_REQUEST, text, sub_id)
            return
        head = b'{"type":"data","id":' + json.dumps(sub_id).encode() + b',"event":'
        self._add(_Subscription(sub_id, key, wildcard, client, head))
        await self._send(client, {"type": "subscribe_success", "id": sub_id})

    def _refused(self, auth: object, key: str, wildcard: bool) -> str | None:
        """Why a subscription's authorization does not admit it to `key`, or None."""
        if not isinstance(auth, dict):
            return "missing authorization"
        if key.split("/")[1] != PLAYER_NAMESPACE:
            return None if auth.get("x-api-key") == self.api_key else "missing or invalid API key"
        bearer = auth.get("Authorization")
        if self.players is None or not isinstance(bearer, str):
            return "player channels need the player's bearer token (Authorization)"
        return self.players(bearer, key, wildcard)

    async def _unsubscribe(self, client: _Client, sub_id: object) -> None:
        subscription = client.subscriptions.get(sub_id) if isinstance(sub_id, str) else None
        if subscription is None:
            text = f"no subscription with id {sub_id!r}"
            await self._fail(client, "unsubscribe_error", BAD_REQUEST, text, sub_id)
            return
        self._remove(subscription)
        await self._send(client, {"type": "unsubscribe_success", "id": sub_id})

    # HTTP
    async def answer(self, request: HttpRequest) -> Reply:
        path = request.target.split("?", 1)[0]
        if path == PUBLISH_PATH:
            if request.method != "POST":
                return _errors(405, BAD_REQUEST, "publish with POST")
            return self._publish_request(request)
        if path == "/stats" and request.method in ("GET", "HEAD"):
            return Reply(200, {}, _json_bytes(self.stats()))
        if path == "/health" and request.method in ("GET", "HEAD"):
            return Reply(200, {}, b'{"ok":true}')
        return _errors(404, "NotFoundException", f"no route for {request.method} {path}")

    def _publish_request(self, request: HttpRequest) -> Reply:
        key_id, secret = self.publisher
        try:
            verify(
                method=request.method,
                target=request.target,
                headers=request.headers,
                body=request.body,
                access_key_id=key_id,
                secret_access_key=secret,
                service="appsync",
            )
        except SignatureError as exc:
            self.refused_publishes += 1
            log.warning("publish refused from %s: %s", request.peer, exc)
            return _errors(401, UNAUTHORIZED, f"publishing needs the publisher's IAM role: {exc}")
        try:
            body = json.loads(request.body)
        except ValueError:
            return _errors(400, BAD_REQUEST, "the body is not JSON")
        if not isinstance(body, dict):
            return _errors(400, BAD_REQUEST, "the body is a JSON object")
        events = body.get("events")
        if not isinstance(events, list) or not 1 <= len(events) <= MAX_EVENTS:
            return _errors(400, BAD_REQUEST, f"events is a list of 1-{MAX_EVENTS}")
        for index, event in enumerate(events):
            if not isinstance(event, str):
                return _errors(400, BAD_REQUEST, f"event {index} is not a string")
            try:
                size = len(event.encode())
            except UnicodeEncodeError:
                return _errors(400, BAD_REQUEST, f"event {index} is not valid UTF-8 text")
            if size > MAX_EVENT_BYTES:
                return _errors(413, "PayloadTooLargeException", f"event {index} is over 240 KiB")
            try:
                _strict_json(event)
            except ValueError:
                return _errors(400, BAD_REQUEST, f"event {index} is not valid JSON")
        try:
            channel, _ = parse_channel(body.get("channel"), wildcard=False)
        except ChannelError as exc:
            return _errors(400, BAD_REQUEST, str(exc))
        self.publish(channel, events)
        successful = [{"identifier": str(uuid.uuid4()), "index": i} for i in range(len(events))]
        return Reply(200, {}, _json_bytes({"successful": successful, "failed": []}))


def _errors(status: int, error_type: str, message: str) -> Reply:
    return Reply(status, {}, _json_bytes({"errors": [_error(error_type, message)]}))


async def serve_forever(
    http_port: int,
    ws_port: int,
    api_key: str,
    ka_interval: float,
    host: str = "127.0.0.1",
    publisher: tuple[str, str] = ("", ""),
    players: Callable[[str, str, bool], str | None] | None = None,
) -> None:
    """Serve both endpoints until cancelled."""
    api = EventApi(api_key, ka_interval, publisher=publisher, players=players)
    http = HttpServer(api.answer, max_body=MAX_BODY)
    _, bound_http = await http.start(host, http_port)
    async with serve(
        api.handle,
        host,
        ws_port,
        subprotocols=[SUBPROTOCOL],
        select_subprotocol=api.select_subprotocol,
        process_request=api.process_request,
        compression=None,  # every frame would be compressed once per subscriber
        max_size=MAX_MESSAGE,
        server_header=None,
        reuse_address=True,
        backlog=1024,
    ) as ws_server:
        bound_ws = ws_server.sockets[0].getsockname()[1]
        ka = asyncio.get_running_loop().create_task(api.keep_alive())
        print(
            f"listening on http://{host}:{bound_http}{PUBLISH_PATH}"
            f" and ws://{host}:{bound_ws}{REALTIME_PATH}",
            flush=True,
        )
        try:
            await asyncio.Event().wait()
        finally:
            ka.cancel()
            await http.close()


def player_check_from_env() -> Callable[[str, str, bool], str | None] | None:
    """Who may subscribe to a player channel: the very decision of the AWS authorizer
    (leaderboard/api/channel_auth.py), with the local token rules; None without JWT_SECRET
    (then nobody may)."""
    if not os.environ.get("JWT_SECRET"):
        return None
    from leaderboard.api.bearer import TokenVerifier
    from leaderboard.api.channel_auth import SUBSCRIBE, decide
    from leaderboard.settings import TokenSettings

    verifier = TokenVerifier(TokenSettings.from_env())

    def check(authorization: str, key: str, wildcard: bool) -> str | None:
        request = {
            "authorizationToken": authorization,
            "requestContext": {
                "operation": SUBSCRIBE,
                "channelNamespaceName": PLAYER_NAMESPACE,
                "channel": f"{key}/*" if wildcard else key,
            },
        }
        decision = decide(request, verifier, namespace=PLAYER_NAMESPACE)
        return None if decision.authorized else decision.reason

    return check


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m devstack.live_server",
        description="A local stand-in for an AWS AppSync Events API.",
    )
    parser.add_argument("--http-port", type=int, required=True, help="POST /event (0: any)")
    parser.add_argument("--ws-port", type=int, required=True, help="/event/realtime (0: any)")
    parser.add_argument("--api-key", required=True, help="the key subscribers must present")
    parser.add_argument("--ka-interval", type=float, default=DEFAULT_KA_SECONDS)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--publisher-key-id",
        required=True,
        help="the access key id publishes are signed with (its secret: LIVE_PUBLISHER_SECRET)",
    )
    args = parser.parse_args(argv)
    if args.ka_interval <= 0:
        parser.error("--ka-interval must be positive")
    secret = os.environ.get("LIVE_PUBLISHER_SECRET", "")
    if not secret:
        parser.error("LIVE_PUBLISHER_SECRET (the publisher's secret access key) is not set")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    logging.getLogger("websockets").setLevel(logging.WARNING)
    coroutine = serve_forever(
        args.http_port,
        args.ws_port,
        args.api_key,
        args.ka_interval,
        args.host,
        publisher=(args.publisher_key_id, secret),
        players=player_check_from_env(),
    )
    try:
        try:
            import uvloop
        except ImportError:
            asyncio.run(coroutine)
        else:
            uvloop.run(coroutine)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise
        # the wording devstack.servers looks for to retry on other ports
        print(f"{os.strerror(errno.EADDRINUSE)}: {exc}", file=sys.stderr, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
