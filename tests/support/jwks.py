"""An issuer for RS256 tests: RSA keys made in the test, their JWK set served over real HTTP on
the loopback, and tokens signed with them. What it serves can be changed while it runs (key
rotation, an outage, a redirect, a slow or broken answer), and it counts the requests."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ISSUER = "https://issuer.test/pool"
AUDIENCE = "leaderboard-app"


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(key: rsa.RSAPrivateKey, kid: str, **extra: Any) -> dict[str, Any]:
    jwk: dict[str, Any] = RSAAlgorithm.to_jwk(key.public_key(), as_dict=True)
    return {**jwk, "kid": kid, "use": "sig", "alg": "RS256", **extra}


def rs256(key: rsa.RSAPrivateKey, kid: str | None, **changes: Any) -> str:
    """A token signed with `key`, naming `kid`, with valid claims and `changes` (... removes)."""
    now = int(time.time())
    claims = {"sub": "p-1", "iss": ISSUER, "aud": AUDIENCE, "iat": now - 5, "exp": now + 600}
    claims.update(changes)
    headers = {"kid": kid} if kid is not None else {}
    payload = {k: v for k, v in claims.items() if v is not ...}
    return jwt.encode(payload, key, algorithm="RS256", headers=headers)


@dataclass
class Answer:
    """What the server answers next: a JWK set, or a failure."""

    keys: list[dict[str, Any]] = field(default_factory=list)
    status: int = 200
    body: bytes | None = None  # sent instead of the key set
    delay: float = 0.0
    redirect_to: str | None = None


class JwksServer:
    """The issuer's `/.well-known/jwks.json` on 127.0.0.1, in a thread of this process."""

    def __init__(self) -> None:
        self.answer = Answer()
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests += 1
                answer = server.answer
                time.sleep(answer.delay)
                if answer.redirect_to:
                    self.send_response(302)
                    self.send_header("Location", answer.redirect_to)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = answer.body
                if body is None:
                    body = json.dumps({"keys": answer.keys}).encode()
                self.send_response(answer.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self._thread = threading.Thread(
            target=self._http.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}/.well-known/jwks.json"

    def close(self) -> None:
        self._http.shutdown()
        self._http.server_close()
