"""The local stack's HTTP/1.1 server (devstack.http11), which the gateway and the SQS endpoint
share: keep-alive, pipelining, bodies, HEAD, 100-continue, limits and malformed requests, all
over a real socket."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator

import pytest

from devstack.http11 import HttpRequest, HttpServer, Reply
from devstack.runtime import EventLoopThread


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, int, list[HttpRequest]]]:
    seen: list[HttpRequest] = []

    async def answer(request: HttpRequest) -> Reply:
        seen.append(request)
        if request.target.startswith("/slow"):
            await asyncio.sleep(0.05)
        body = json.dumps(
            {"method": request.method, "target": request.target, "size": len(request.body)}
        ).encode()
        return Reply(200, {"content-type": "application/json", "x-peer": request.peer}, body)

    loop = EventLoopThread("test-http")
    http = HttpServer(answer, max_body=1000)
    host, port = asyncio.run_coroutine_threadsafe(http.start("127.0.0.1", 0), loop.loop).result()
    yield host, port, seen
    asyncio.run_coroutine_threadsafe(http.close(), loop.loop).result(5)
    loop.stop()


def _read_response(sock: socket.socket, buffer: bytearray) -> tuple[int, dict[str, str], bytes]:
    while b"\r\n\r\n" not in buffer:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        buffer += chunk
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    length = int(headers.get("content-length", 0))
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed")
        rest += chunk
    buffer[:] = rest[length:]
    return int(lines[0].split(" ")[1]), headers, rest[:length]


def _connect(server) -> socket.socket:
    host, port, _ = server
    return socket.create_connection((host, port), timeout=5)


def test_many_requests_on_one_kept_alive_connection(server):
    sock, buffer = _connect(server), bytearray()
    for n in range(20):
        sock.sendall(f"GET /n/{n} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        status, headers, body = _read_response(sock, buffer)
        assert status == 200 and json.loads(body)["target"] == f"/n/{n}"
        assert "connection" not in headers and "date" in headers
        assert headers["x-peer"] == "127.0.0.1"
    sock.close()


def test_pipelined_requests_are_answered_in_order(server):
    sock, buffer = _connect(server), bytearray()
    sock.sendall(b"GET /slow/1 HTTP/1.1\r\nHost: x\r\n\r\nGET /fast/2 HTTP/1.1\r\nHost: x\r\n\r\n")
    first = json.loads(_read_response(sock, buffer)[2])
    second = json.loads(_read_response(sock, buffer)[2])
    assert (first["target"], second["target"]) == ("/slow/1", "/fast/2")
    sock.close()


def test_bodies_by_length_and_chunked_and_100_continue(server):
    sock, buffer = _connect(server), bytearray()
    sock.sendall(b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
    assert json.loads(_read_response(sock, buffer)[2])["size"] == 5
    sock.sendall(
        b"POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
    )
    assert json.loads(_read_response(sock, buffer)[2])["size"] == 7
    sock.sendall(b"PUT /c HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n")
    interim = sock.recv(100)
    assert interim.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
    buffer += interim[len(b"HTTP/1.1 100 Continue\r\n\r\n") :]
    sock.sendall(b"xyz")
    assert json.loads(_read_response(sock, buffer)[2]) == {
        "method": "PUT",
        "target": "/c",
        "size": 3,
    }
    sock.close()


def test_head_has_no_body_and_http10_closes(server):
    sock, buffer = _connect(server), bytearray()
    sock.sendall(b"HEAD /h HTTP/1.1\r\nHost: x\r\n\r\nGET /after HTTP/1.1\r\nHost: x\r\n\r\n")
    while b"\r\n\r\n" not in buffer:
        buffer += sock.recv(65536)
    head, _, rest = bytes(buffer).partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"content-length: " in head
    buffer[:] = rest
    assert json.loads(_read_response(sock, buffer)[2])["target"] == "/after"
    sock.close()
    sock, buffer = _connect(server), bytearray()
    sock.sendall(b"GET /old HTTP/1.0\r\n\r\n")
    status, headers, _ = _read_response(sock, buffer)
    assert status == 200 and headers["connection"] == "close"
    assert sock.recv(10) == b""
    sock.close()


def test_too_large_and_malformed_requests_are_refused_and_closed(server):
    seen = server[2]
    before = len(seen)
    sock, buffer = _connect(server), bytearray()
    sock.sendall(b"POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 5000\r\n\r\n" + b"x" * 5000)
    status, headers, body = _read_response(sock, buffer)
    assert status == 413 and headers["connection"] == "close"
    assert json.loads(body) == {"message": "Request Entity Too Large"}
    sock.close()
    sock, buffer = _connect(server), bytearray()
    sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
    status, _, _ = _read_response(sock, buffer)
    assert status == 400
    sock.close()
    assert len(seen) == before  # neither reached the handler


def test_concurrent_clients_are_served_at_once(server):
    """Sixteen connections with slow answers open at once are all answered."""
    results: list[int] = []

    def client(n: int) -> None:
        sock, buffer = _connect(server), bytearray()
        sock.sendall(f"GET /slow/{n} HTTP/1.1\r\nHost: x\r\n\r\n".encode())
        results.append(_read_response(sock, buffer)[0])
        sock.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert results == [200] * 16
