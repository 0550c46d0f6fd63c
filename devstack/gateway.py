"""A local stand-in for the API Gateway HTTP API: routes from template.yaml, the JWT
authorizer (HS256 locally), payload format 2.0 events, and the handlers' responses.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

import jwt

from devstack import tokens
from devstack.runtime import FunctionTimeout, InvocationError
from devstack.template import Route, Template

log = logging.getLogger("devstack.gateway")
MAX_PAYLOAD = 10 * 1024 * 1024  # API Gateway's own limit; the handlers enforce 16 KiB
DEMO_PAGE = Path(__file__).parent / "demo" / "index.html"
Invoke = Callable[[str, dict[str, Any]], Any]


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
        "rawPath": raw_path,
        "rawQueryString": raw_query,
        "headers": headers,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": headers.get("host", "127.0.0.1"),
            "domainPrefix": "local",
            "http": {
                "method": method,
                "path": raw_path,
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


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    cookies: tuple[str, ...] = ()

    def json(self) -> Any:
        return json.loads(self.body)


def _message(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(
        status,
        {"content-type": "application/json", **(headers or {})},
        json.dumps({"message": message}).encode(),
    )


class LocalApi:
    """Routing, the JWT authorizer and the Lambda proxy integration, without the socket."""

    def __init__(self, template: Template, invoke: Invoke, jwt_secret: str) -> None:
        self.template = template
        self.invoke = invoke
        self.jwt_secret = jwt_secret

    def authorize(self, route: Route, headers: dict[str, str]) -> tuple[Reply | None, Any]:
        """(refusal, claims): 401 without a valid token, 403 without a required scope."""
        if route.authorizer is None:
            return None, None
        scheme, _, token = headers.get("authorization", "").partition(" ")
        claims = None
        if scheme.lower() == "bearer" and token.strip():
            try:
                claims = tokens.verify(self.jwt_secret, token.strip())
            except jwt.InvalidTokenError:
                claims = None
        if claims is None:
            return _message(401, "Unauthorized", {"www-authenticate": "Bearer"}), None
        granted = set(str(claims.get("scope", "")).split())
        if route.scopes and not granted.intersection(route.scopes):
            return _message(403, "Forbidden"), None
        return None, claims

    def handle(
        self,
        method: str,
        target: str,
        headers: dict[str, str],
        body: bytes = b"",
        source_ip: str = "127.0.0.1",
    ) -> Reply:
        parts = urlsplit(target)
        headers = {k.lower(): v for k, v in headers.items()}
        if method == "GET" and parts.path in ("/", "/index.html") and DEMO_PAGE.exists():
            return Reply(200, {"content-type": "text/html; charset=utf-8"}, DEMO_PAGE.read_bytes())
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
        try:
            result = self.invoke(route.function, event)
        except FunctionTimeout:
            return _message(503, "Service Unavailable")
        except InvocationError as exc:
            log.error("%s failed:\n%s", route.function, exc)
            return _message(500, "Internal Server Error")
        payload = result.get("body") or ""
        raw = base64.b64decode(payload) if result.get("isBase64Encoded") else str(payload).encode()
        return Reply(
            int(result.get("statusCode", 200)),
            {k.lower(): str(v) for k, v in (result.get("headers") or {}).items()},
            raw,
            tuple(result.get("cookies") or ()),
        )


class Gateway(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], api: LocalApi) -> None:
        super().__init__(address, _Handler)
        self.api = api


class _Handler(BaseHTTPRequestHandler):
    server: Gateway
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s " + format, self.address_string(), *args)

    def _send(self, reply: Reply) -> None:
        self.send_response(reply.status)
        headers = {"content-type": "application/json", **reply.headers}
        for key, value in headers.items():
            if key not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(key, value)
        for cookie in reply.cookies:
            self.send_header("set-cookie", cookie)
        self.send_header("content-length", str(len(reply.body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(reply.body)

    def _serve(self) -> None:
        started = time.perf_counter()
        length = int(self.headers.get("content-length") or 0)
        if length > MAX_PAYLOAD:
            self.close_connection = True
            self._send(_message(413, "Request Entity Too Large"))
            return
        body = self.rfile.read(length) if length else b""
        headers: dict[str, str] = {}
        for key, value in self.headers.items():
            key = key.lower()
            headers[key] = f"{headers[key]},{value}" if key in headers else value
        reply = self.server.api.handle(
            self.command, self.path, headers, body, self.client_address[0]
        )
        self._send(reply)
        log.info(
            "%s %s -> %s (%.1f ms)",
            self.command,
            self.path,
            reply.status,
            (time.perf_counter() - started) * 1000,
        )

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _serve
