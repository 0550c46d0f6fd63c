"""Publishing to the event API over kept-alive connections: a connection the server closed
while idle is replaced without losing the message, and what the API answers is told apart
(refused, throttled, failed) for the publisher to act on."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from leaderboard.stores.aws.event_api import EventApiPublisher, PublishError


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    answers: list[tuple[int, dict[str, Any]]] = []
    received: list[dict[str, Any]] = []
    connections: set[tuple[str, int]] = set()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        assert self.headers["authorization"].startswith("AWS4-HMAC-SHA256 ")
        type(self).received.append(body)
        type(self).connections.add(self.client_address)
        status, reply = type(self).answers.pop(0) if type(self).answers else (200, {})
        data = json.dumps(reply or {"successful": [], "failed": []}).encode()
        self.send_response(status)
        self.send_header("content-length", str(len(data)))
        self.end_headers()  # no "Connection: close": the client may keep the connection
        self.wfile.write(data)
        self.close_connection = True  # ... which this server then closes, as an idle timeout

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    _Handler.answers, _Handler.received, _Handler.connections = [], [], set()
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/event"
    httpd.shutdown()
    httpd.server_close()


def test_a_connection_the_server_closed_while_idle_is_replaced_and_nothing_is_lost(
    server: str,
) -> None:
    publisher = EventApiPublisher(server)
    for n in range(3):
        publisher.publish(f"/leaderboards/b{n}", [json.dumps({"n": n})])
    assert [r["channel"] for r in _Handler.received] == [
        "/leaderboards/b0",
        "/leaderboards/b1",
        "/leaderboards/b2",
    ]
    assert len(_Handler.connections) == 3  # each on a new connection, the closed one dropped


def test_what_the_api_answers_is_told_apart(server: str) -> None:
    publisher = EventApiPublisher(server)
    _Handler.answers = [
        (429, {"errors": [{"errorType": "TooManyRequestsException"}]}),
        (400, {"errors": [{"errorType": "BadRequestException", "message": "bad channel"}]}),
        (200, {"successful": [], "failed": [{"index": 0, "code": 500}]}),
    ]
    statuses = []
    for _ in range(3):
        with pytest.raises(PublishError) as caught:
            publisher.publish("/leaderboards/b", ["{}"])
        statuses.append(caught.value.status)
    assert statuses == [429, 400, 200]
    publisher.publish("/leaderboards/b", ["{}"])  # and then it goes through


def test_an_api_that_does_not_answer_is_a_publish_error() -> None:
    publisher = EventApiPublisher("http://127.0.0.1:9/event", timeout=0.5)
    with pytest.raises(PublishError) as caught:
        publisher.publish("/leaderboards/b", ["{}"])
    assert caught.value.status is None
