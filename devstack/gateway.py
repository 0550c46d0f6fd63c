"""A local stand-in for the API Gateway HTTP API: routes from template.yaml, the JWT
authorizer (HS256 locally), payload format 2.0 events, and the handlers' responses.

As in API Gateway, a route without an authorizer (the reads, /health) checks nothing: the
Authorization header reaches the function untouched, and the read function verifies a token
itself (with the same check as the authorizer here, leaderboard/api/bearer.py).

`LocalApi` is the gateway without a socket (the tests call it directly); `HttpGateway` serves
it over HTTP/1.1 with keep-alive on an asyncio loop, parsing with httptools, one response per
write. A request costs the gateway no thread and no lock: it awaits the function's worker.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from devstack import tokens
from devstack.http11 import HttpRequest, HttpServer, Reply, message_reply
from devstack.runtime import FunctionTimeout, Invocation, InvocationError, WorkerLost
from devstack.template import Route, Template
from devstack.webhook_receiver import EVENTS_PATH as WEBHOOK_EVENTS_PATH
from devstack.webhook_receiver import PATH as WEBHOOK_PATH
from devstack.webhook_receiver import WebhookReceiver
from leaderboard.api.bearer import bearer_token
from leaderboard.domain.errors import InvalidToken

log = logging.getLogger("devstack.gateway")
MAX_PAYLOAD = 10 * 1024 * 1024  # API Gateway's own limit; the handlers enforce 16 KiB
MAX_HEAD = 10 * 1024  # an HTTP API's quota for the request line and header values together
DEMO_PAGE = Path(__file__).parent / "demo" / "index.html"
OPENAPI = Path(__file__).resolve().parent.parent / "docs" / "openapi.json"
# The JS client the demo page imports (`make run` builds it: clients/js/dist), served under
# /client/: its ES modules import one another by relative names.
JS_CLIENT = Path(__file__).resolve().parent.parent / "clients" / "js" / "dist"
JS_CLIENT_PREFIX = "/client/"
_JS_MODULE = re.compile(r"[a-z][a-z0-9_-]{0,63}\.js")
# The operator console (console/, deployed as static files on AWS), served under /console/: its
# files by name, the JS client under /console/client/ (where a deployment uploads it beside the
# page), and a config.json made for this stack (docs: README, "Operator console").
CONSOLE = Path(__file__).resolve().parent.parent / "console"
CONSOLE_PREFIX = "/console/"
_CONSOLE_FILE = re.compile(r"[a-z][a-z0-9_-]{0,63}\.(html|js|css|png|svg)")
_CONTENT_TYPES = {
    "html": "text/html; charset=utf-8",
    "js": "text/javascript; charset=utf-8",
    "css": "text/css; charset=utf-8",
    "png": "image/png",
    "svg": "image/svg+xml",
}
# Local only, never in template.yaml: an admin token for the console's "Get a local admin
# token" button, minted with the stack's secret (what `make token` prints, over HTTP).
LOCAL_ADMIN_TOKEN_PATH = "/local/admin-token"  # noqa: S105 (a route, not a secret)
LOCAL_ADMIN_SUBJECT = "local-console-admin"
LOCAL_ADMIN_TTL_SECONDS = 8 * 3600
_HOST = re.compile(r"(?:[A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?")
Invoke = Callable[[str, dict[str, Any]], Any]
AsyncInvoke = Callable[[str, dict[str, Any]], Awaitable[Invocation]]


def build_event(
    route: Route,
    method: str,
    raw_path: str,
    raw_query: str,
    headers: dict[str, str],
    body: bytes,
    path_params: dict[str, str],
    claims: dict[str, Any] | None,
    source_ip: str,
) -> dict[str, Any]:
    """An HTTP API payload-2.0 event, as API Gateway would send it."""
    query: dict[str, str] = {}
    for key, value in parse_qsl(raw_query, keep_blank_values=True):
        query[key] = f"{query[key]},{value}" if key in query else value
    now = datetime.now(UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": route.route_key,
        # An HTTP API hands the function the path percent-decoded (`rawPath` too, despite the
        # name), so `players/a%40b` reaches the handler as `players/a@b`, as in AWS.
        "rawPath": unquote(raw_path),
        "rawQueryString": raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": headers.get("host", "127.0.0.1"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": unquote(raw_path),
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": headers.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route.route_key,
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = query
    if path_params:
        event["pathParameters"] = {k: unquote(v) for k, v in path_params.items()}
    if "cookie" in headers:
        event["cookies"] = [c.strip() for c in headers["cookie"].split(";")]
    if claims is not None:
        scope = claims.get("scope")
        event["requestContext"]["authorizer"] = {
            "jwt": {
                # API Gateway hands claims over as strings
                "claims": {
                    k: v if isinstance(v, str) else json.dumps(v) for k, v in claims.items()
                },
                "scopes": scope.split() if isinstance(scope, str) else None,
            }
        }
    if body:
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"] = base64.b64encode(body).decode()
            event["isBase64Encoded"] = True
    return event


_message = message_reply


@dataclass(frozen=True)
class Call:
    """A request the gateway hands to a function: which one, and the payload-2.0 event."""

    function: str
    event: dict[str, Any]


class LocalApi:
    """Routing, the JWT authorizer and the Lambda proxy integration, without the socket."""

    def __init__(
        self,
        template: Template,
        invoke: Invoke,
        jwt_secret: str,
        ainvoke: AsyncInvoke | None = None,
        live: dict[str, str] | None = None,
        webhooks: WebhookReceiver | None = None,
    ) -> None:
        self.template = template
        self.invoke = invoke
        self.ainvoke = ainvoke
        self.jwt_secret = jwt_secret
        self.live = live
        self.webhooks = webhooks

    def demo_page(self) -> bytes:
        """The demo page, told where the live updates are (it polls when it is told nothing)."""
        page = DEMO_PAGE.read_bytes()
        if not self.live:
            return page
        config = html.escape(json.dumps(self.live, separators=(",", ":")), quote=True)
        meta = f'<meta name="leaderboard-live" content="{config}">\n</head>'.encode()
        return page.replace(b"</head>", meta, 1)

    @staticmethod
    def js_module(name: str) -> Reply:
        """One module of the built JS client (a name, never a path), or 404."""
        module = JS_CLIENT / name
        if not _JS_MODULE.fullmatch(name) or not module.is_file():
            return _message(404, "Not Found")
        headers = {"content-type": "text/javascript; charset=utf-8", "cache-control": "no-cache"}
        return Reply(200, headers, module.read_bytes())

    def console_file(self, name: str) -> Reply:
        """One file of the operator console (a name, never a path), or 404. The page comes with
        the content security policy its CloudFront distribution sends on AWS (template.yaml),
        with this stack's live endpoint, so what the policy refuses fails here too."""
        found = _CONSOLE_FILE.fullmatch(name)
        file = CONSOLE / name
        if not found or not file.is_file():
            return _message(404, "Not Found")
        headers = {"content-type": _CONTENT_TYPES[found.group(1)], "cache-control": "no-cache"}
        if found.group(1) == "html":
            headers["content-security-policy"] = self.console_policy()
        return Reply(200, headers, file.read_bytes())

    def console_policy(self) -> str:
        live = ""
        if self.live:
            ws = urlsplit(self.live["realtime_url"])
            live = f" http://{self.live['http_host']} {ws.scheme}://{ws.netloc}"
        return (
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            f"connect-src 'self'{live}; manifest-src 'self'; base-uri 'none'; "
            "form-action 'none'; frame-ancestors 'none'; object-src 'none'"
        )

    def console_config(self, host: str | None) -> Reply:
        """The console's config.json for this stack: the API at the origin the page came from,
        the live updates as the demo page gets them, and the local admin-token route."""
        config: dict[str, Any] = {}
        origin = f"http://{host}" if host and _HOST.fullmatch(host) else ""
        if origin:
            config["api_url"] = origin
        if self.live:
            config["live"] = self.live
        config["local_admin_token_url"] = origin + LOCAL_ADMIN_TOKEN_PATH
        headers = {"content-type": "application/json", "cache-control": "no-store"}
        return Reply(200, headers, json.dumps(config).encode())

    def local_admin_token(self, headers: dict[str, str]) -> Reply:
        """`POST /local/admin-token`: {"token": an admin token of this stack}. A browser's
        request from another origin (a page on the web posting to 127.0.0.1) is refused."""
        origin, host = headers.get("origin"), headers.get("host")
        if origin is not None and (not host or origin != f"http://{host}"):
            return _message(403, "Forbidden")
        token = tokens.mint(
            self.jwt_secret,
            LOCAL_ADMIN_SUBJECT,
            "leaderboard/admin",
            ttl_seconds=LOCAL_ADMIN_TTL_SECONDS,
        )
        body = json.dumps({"token": token, "expires_in": LOCAL_ADMIN_TTL_SECONDS}).encode()
        return Reply(200, {"content-type": "application/json", "cache-control": "no-store"}, body)

    def console(self, path: str, headers: dict[str, str]) -> Reply:
        """GET /console and everything under /console/."""
        if path == "/console":
            return Reply(302, {"location": CONSOLE_PREFIX}, b"")
        name = path.removeprefix(CONSOLE_PREFIX)
        if name == "config.json":
            return self.console_config(headers.get("host"))
        if name.startswith("client/"):
            return self.js_module(name.removeprefix("client/"))
        return self.console_file(name or "index.html")

    @staticmethod
    def openapi(host: str | None) -> bytes:
        """docs/openapi.json with `servers` naming this stack, so tools pointed at the document
        call the stack that served it (relative "/" when the Host header is unusable)."""
        document = json.loads(OPENAPI.read_bytes())
        if host and _HOST.fullmatch(host):
            document["servers"] = [{"url": f"http://{host}", "description": "This local stack."}]
        else:
            document["servers"] = [{"url": "/"}]
        return json.dumps(document, indent=2, ensure_ascii=False).encode()

    def authorize(self, route: Route, headers: dict[str, str]) -> tuple[Reply | None, Any]:
        """(refusal, claims): 401 without a valid token, 403 without a required scope. A route
        without an authorizer checks nothing and passes the headers on as they came."""
        if route.authorizer is None:
            return None, None
        # Only the one spelling every client sends and API Gateway accepts: a lowercase scheme,
        # extra spaces or two Authorization headers (joined with a comma, as API Gateway joins
        # them) are refused, so what works here works in AWS too.
        token = bearer_token(headers.get("authorization", ""))
        claims = None
        if token is not None:
            try:
                claims = tokens.verify(self.jwt_secret, token)
            except InvalidToken:
                claims = None
        if claims is None:
            return _message(401, "Unauthorized", {"www-authenticate": "Bearer"}), None
        granted = set(str(claims.get("scope", "")).split())
        if route.scopes and not granted.intersection(route.scopes):
            return _message(403, "Forbidden"), None
        return None, claims

    def prepare(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes = b"",
        source_ip: str = "127.0.0.1",
    ) -> Reply | Call:
        """What API Gateway does before the integration: the reply it gives on its own (the
        demo page, the operator console, the OpenAPI document, the local admin token, 404, 401,
        403), or the function to call with its event."""
        parts = urlsplit(target)
        headers = {k.lower(): v for k, v in headers.items()}
        if method == "GET" and parts.path in ("/", "/index.html") and DEMO_PAGE.exists():
            return Reply(200, {"content-type": "text/html; charset=utf-8"}, self.demo_page())
        if method == "GET" and parts.path.startswith(JS_CLIENT_PREFIX):
            return self.js_module(parts.path.removeprefix(JS_CLIENT_PREFIX))
        if method == "GET" and (parts.path == "/console" or parts.path.startswith(CONSOLE_PREFIX)):
            return self.console(parts.path, headers)
        if method == "POST" and parts.path == LOCAL_ADMIN_TOKEN_PATH:
            return self.local_admin_token(headers)
        if method == "GET" and parts.path == "/openapi.json" and OPENAPI.exists():
            body = self.openapi(headers.get("host"))
            return Reply(200, {"content-type": "application/json"}, body)
        if self.webhooks is not None and parts.path.startswith("/local/webhook"):
            local = self.local_webhook(method, parts.path, headers, body)
            if local is not None:
                return local
        found = self.template.find_route(method, parts.path)
        if found is None:
            return _message(404, "Not Found")
        route, params = found
        refusal, claims = self.authorize(route, headers)
        if refusal is not None:
            return refusal
        event = build_event(
            route, method, parts.path, parts.query, headers, body, params, claims, source_ip
        )
        return Call(route.function, event)

    def local_webhook(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> Reply | None:
        """The local webhook receiver (not part of the API): `POST /local/webhook` takes a
        delivery and checks its signature, `GET /local/webhook-events` lists the last ones."""
        assert self.webhooks is not None
        if method == "POST" and path == WEBHOOK_PATH:
            status, _ = self.webhooks.handle(headers, body)
            return Reply(status, {}, b"")
        if method == "GET" and path == WEBHOOK_EVENTS_PATH:
            listed = json.dumps({"events": self.webhooks.events()}).encode()
            return Reply(200, {"content-type": "application/json"}, listed)
        return None

    @staticmethod
    def reply(result: Any) -> Reply:
        """The HTTP response of a Lambda proxy integration's result."""
        payload = result.get("body") or ""
        raw = base64.b64decode(payload) if result.get("isBase64Encoded") else str(payload).encode()
        return Reply(
            int(result.get("statusCode", 200)),
            {k.lower(): str(v) for k, v in (result.get("headers") or {}).items()},
            raw,
            tuple(result.get("cookies") or ()),
        )

    @staticmethod
    def failure(function: str, exc: Exception) -> Reply:
        """A timeout or a function process that died mid-request is an infrastructure fault the
        client may retry (503 + Retry-After, as for a throttled Lambda); a handler that raised
        is a bug (500)."""
        if isinstance(exc, FunctionTimeout | WorkerLost):
            log.warning("%s: %s", function, str(exc) or "timed out")
            return _message(503, "Service Unavailable", {"retry-after": "1"})
        log.error("%s failed:\n%s", function, exc)
        return _message(500, "Internal Server Error")

    def handle(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes = b"",
        source_ip: str = "127.0.0.1",
    ) -> Reply:
        prepared = self.prepare(method, target, headers, body, source_ip)
        if isinstance(prepared, Reply):
            return prepared
        try:
            result = self.invoke(prepared.function, prepared.event)
        except (FunctionTimeout, InvocationError) as exc:
            return self.failure(prepared.function, exc)
        return self.reply(result)

    async def ahandle(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes = b"",
        source_ip: str = "127.0.0.1",
    ) -> tuple[Reply, float | None]:
        """`handle` on the event loop: (reply, the function's own duration in ms, if called)."""
        assert self.ainvoke is not None, "LocalApi was built without an async invoke"
        prepared = self.prepare(method, target, headers, body, source_ip)
        if isinstance(prepared, Reply):
            return prepared, None
        try:
            invocation = await self.ainvoke(prepared.function, prepared.event)
        except (FunctionTimeout, InvocationError) as exc:
            return self.failure(prepared.function, exc), None
        return self.reply(invocation.result), invocation.duration_ms


class AccessLog:
    """Request lines at INFO, at most `per_second` a second, and a summary every `every` seconds
    while requests come in: readable when one person clicks, bounded under a load test."""

    def __init__(self, per_second: float = 10, every: float = 10) -> None:
        self.per_second = per_second
        self.every = every
        self._allowance = per_second
        self._refilled = time.monotonic()
        self._window_start = self._refilled
        self._latencies: list[float] = []
        self._errors = 0
        self._unlisted = 0

    def record(self, line: str, status: int, seconds: float) -> None:
        now = time.monotonic()
        self._allowance = min(
            self.per_second, self._allowance + (now - self._refilled) * self.per_second
        )
        self._refilled = now
        self._latencies.append(seconds)
        self._errors += status >= 500
        if self._allowance >= 1:
            self._allowance -= 1
            log.info("%s", line)
        else:
            self._unlisted += 1
            log.debug("%s", line)
        if now - self._window_start >= self.every:
            self.summarize(now)

    def summarize(self, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        latencies, self._latencies = sorted(self._latencies), []
        if latencies and self._unlisted:
            log.info(
                "%d requests in %.0f s (%.0f/s; %d not listed above): p50 %.1f ms, p99 %.1f ms,"
                " %d answered 5xx",
                len(latencies),
                now - self._window_start,
                len(latencies) / max(1e-9, now - self._window_start),
                self._unlisted,
                latencies[len(latencies) // 2] * 1000,
                latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))] * 1000,
                self._errors,
            )
        self._window_start, self._errors, self._unlisted = now, 0, 0


class HttpGateway:
    """The HTTP API on a socket, on the running asyncio loop."""

    def __init__(self, api: LocalApi, access_log: AccessLog | None = None) -> None:
        self.api = api
        self.access_log = access_log or AccessLog()
        self.http = HttpServer(self._answer, MAX_PAYLOAD, MAX_HEAD)

    async def _answer(self, request: HttpRequest) -> Reply:
        reply, duration = await self.api.ahandle(
            request.method, request.target, request.headers, request.body, request.peer
        )
        elapsed = time.perf_counter() - request.received
        self.access_log.record(
            f"{request.method} {request.target} -> {reply.status} ({elapsed * 1000:.1f} ms"
            + (f", function {duration:.1f} ms)" if duration is not None else ")"),
            reply.status,
            elapsed,
        )
        return reply

    async def start(self, host: str, port: int) -> tuple[str, int]:
        return await self.http.start(host, port)

    async def close(self) -> None:
        await self.http.close()
        self.access_log.summarize()
