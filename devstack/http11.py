"""A small HTTP/1.1 server on asyncio: keep-alive, pipelined requests answered in order, bodies
by Content-Length or chunked (parsed by httptools), `Expect: 100-continue`, and each response in
one write (headers and body apart would meet Nagle's algorithm and a 40 ms delayed ACK).
A request head (request line and headers) over `max_head` bytes is refused with 431 before it is
buffered whole: httptools itself sets no limit, so a client could otherwise grow one header
without end.

The local gateway and the local SQS endpoint both serve through it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import formatdate
from http import HTTPStatus
from typing import Any

import httptools

log = logging.getLogger("devstack.http")


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    cookies: tuple[str, ...] = ()

    def json(self) -> Any:
        return json.loads(self.body)


_REASONS = {s.value: s.phrase for s in HTTPStatus}
_HOP_BY_HOP = {"content-length", "connection", "transfer-encoding", "keep-alive"}
LINGER_SECONDS = 2.0  # how long a refused client may go on sending before it is cut off


class _HeadTooLarge(Exception):
    """Raised in a parser callback to stop parsing a request head over the limit."""


class _Date:
    """The Date header, formatted once a second."""

    second = -1
    value = b""

    @classmethod
    def header(cls) -> bytes:
        now = int(time.time())
        if now != cls.second:
            cls.second, cls.value = now, formatdate(now, usegmt=True).encode()
        return cls.value


@dataclass
class HttpRequest:
    method: str
    target: str
    headers: dict[str, str]  # names in lower case; repeated headers joined with ","
    body: bytes
    keep_alive: bool
    received: float  # time.perf_counter() when its first byte was parsed
    peer: str


class _HttpConnection(asyncio.Protocol):
    """One client connection: requests parsed as they arrive, answered in order."""

    def __init__(self, server: HttpServer) -> None:
        self.server = server
        self.transport: asyncio.Transport | None = None
        self.peer = "127.0.0.1"
        self.parser = httptools.HttpRequestParser(self)
        self.pending: deque[HttpRequest] = deque()
        self.worker: asyncio.Task[None] | None = None
        self.closed = False
        self._in_head = False  # between a message's first byte and the end of its headers
        self._crossed = False  # a message began or its head ended during the current feed
        self._reset()

    def _reset(self) -> None:
        self._url = b""
        self._headers: dict[str, str] = {}
        self._body: list[bytes] = []
        self._size = 0
        self._too_large = False
        self._started = 0.0
        self._head_size = 0  # the request line and header values parsed so far
        self._head_raw = 0  # bytes of feeds that fell wholly inside this head

    # asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is no subclass
        peer = transport.get_extra_info("peername")
        if peer:
            self.peer = str(peer[0])
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.server.connections.discard(self)

    def data_received(self, data: bytes) -> None:
        if self.closed:
            return
        self._crossed = False
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._refuse(400, "Bad Request")
            return
        except httptools.HttpParserError as error:
            if isinstance(error.__context__, _HeadTooLarge):
                self._refuse(431, "Request Header Fields Too Large")
            else:
                self._refuse(400, "Bad Request")
            return
        if self._in_head and not self._crossed:
            # all of `data` belongs to a head still unfinished: one header growing without end
            # is caught here, long before httptools hands it over
            self._head_raw += len(data)
            if self._head_raw > self.server.max_head:
                self._refuse(431, "Request Header Fields Too Large")

    # httptools callbacks
    def on_message_begin(self) -> None:
        self._reset()
        self._started = time.perf_counter()
        self._in_head = self._crossed = True

    def _count_head(self, size: int) -> None:
        self._head_size += size
        if self._head_size > self.server.max_head:
            raise _HeadTooLarge

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(value))
        key = name.decode("latin-1").lower()
        text = value.decode("latin-1")
        self._headers[key] = f"{self._headers[key]},{text}" if key in self._headers else text

    def on_headers_complete(self) -> None:
        self._in_head, self._crossed = False, True
        length = self._headers.get("content-length", "")
        if length.isdigit() and int(length) > self.server.max_body:
            self._too_large = True
        elif self._headers.get("expect", "").lower() == "100-continue" and self.transport:
            self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")

    def on_body(self, body: bytes) -> None:
        self._size += len(body)
        if self._size > self.server.max_body:
            self._too_large = True
        if not self._too_large:
            self._body.append(body)

    def on_message_complete(self) -> None:
        if self.closed:
            return
        if self._too_large:
            self._refuse(413, "Request Entity Too Large")
            return
        method = self.parser.get_method().decode("ascii", "replace")
        request = HttpRequest(
            method,
            self._url.decode("latin-1"),
            self._headers,
            b"".join(self._body),
            self.parser.should_keep_alive(),
            self._started,
            self.peer,
        )
        self.pending.append(request)
        if self.worker is None:
            self.worker = asyncio.get_running_loop().create_task(self._answer())
        if len(self.pending) > 32 and self.transport is not None:
            self.transport.pause_reading()  # a client far ahead of us waits in TCP

    # answering
    async def _answer(self) -> None:
        try:
            while self.pending and not self.closed:
                request = self.pending.popleft()
                if self.transport is not None and len(self.pending) < 8:
                    self.transport.resume_reading()
                reply = await self.server.handler(request)
                self._write(request.method, reply, request.keep_alive)
                if not request.keep_alive:
                    self._close()
                    return
        except Exception:
            log.exception("failed to answer a request")
            if not self.closed:
                self._write("GET", message_reply(500, "Internal Server Error"), keep_alive=False)
                self._close()
        finally:
            self.worker = None

    def _write(self, method: str, reply: Reply, keep_alive: bool) -> None:
        if self.closed or self.transport is None:
            return
        lines = [
            f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Unknown')}".encode(),
            b"date: " + _Date.header(),
        ]
        headers = {"content-type": "application/json", **reply.headers}
        for key, value in headers.items():
            if key not in _HOP_BY_HOP:
                lines.append(f"{key}: {value}".encode("latin-1"))
        lines.extend(f"set-cookie: {cookie}".encode("latin-1") for cookie in reply.cookies)
        lines.append(f"content-length: {len(reply.body)}".encode())
        if not keep_alive:
            lines.append(b"connection: close")
        head = b"\r\n".join(lines) + b"\r\n\r\n"
        self.transport.write(head if method == "HEAD" else head + reply.body)

    def _refuse(self, status: int, message: str) -> None:
        """Answer and stop reading. The client may still be sending (a huge head, say): closing
        with its bytes unread would reset the connection and lose the answer, so only our side
        is shut now and the rest of the request is discarded until the client closes."""
        self._write("GET", message_reply(status, message), keep_alive=False)
        if self.transport is None or self.closed or not self.transport.can_write_eof():
            self._close()
            return
        self.closed = True  # data_received ignores whatever else arrives
        self.transport.write_eof()
        asyncio.get_running_loop().call_later(LINGER_SECONDS, self._close)

    def _close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class HttpServer:
    """HTTP/1.1 with keep-alive on the running asyncio loop; `handler` answers each request."""

    def __init__(
        self,
        handler: Callable[[HttpRequest], Awaitable[Reply]],
        max_body: int = 10 << 20,
        max_head: int = 64 << 10,
    ) -> None:
        self.handler = handler
        self.max_body = max_body
        self.max_head = max_head
        self.connections: set[_HttpConnection] = set()
        self.server: asyncio.AbstractServer | None = None

    async def start(self, host: str, port: int) -> tuple[str, int]:
        loop = asyncio.get_running_loop()
        self.server = await loop.create_server(
            lambda: _HttpConnection(self), host, port, reuse_address=True, backlog=1024
        )
        address: tuple[str, int] = self.server.sockets[0].getsockname()[:2]
        return address

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for connection in list(self.connections):
            connection._close()
        if self.server is not None:
            await self.server.wait_closed()


def message_reply(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    """A JSON `{"message": ...}` reply, as API Gateway words its own errors."""
    return Reply(
        status,
        {"content-type": "application/json", **(headers or {})},
        json.dumps({"message": message}).encode(),
    )
