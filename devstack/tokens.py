"""HS256 bearer tokens for the local stack, shaped like the ones the AWS authorizer accepts."""

from __future__ import annotations

import functools
import os
import secrets
import time
from pathlib import Path
from typing import Any

import jwt

from leaderboard.api.bearer import TokenVerifier
from leaderboard.settings import TokenSettings

DEFAULT_ISSUER = "leaderboard-local"
DEFAULT_AUDIENCE = "leaderboard"


def issuer() -> str:
    return os.environ.get("JWT_ISSUER", DEFAULT_ISSUER)


def audience() -> str:
    return os.environ.get("JWT_AUDIENCE", DEFAULT_AUDIENCE)


def local_secret(data_dir: Path) -> str:
    """JWT_SECRET, or a random secret kept in the local data folder (never in the repo)."""
    return kept_secret("JWT_SECRET", data_dir / "jwt-secret")


def kept_secret(variable: str, path: Path) -> str:
    """The environment's `variable`, or a random secret made once and kept at `path` (mode
    0600), so that what was signed before a restart still verifies after it."""
    if os.environ.get(variable):
        return os.environ[variable]
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(secrets.token_urlsafe(32))
        path.chmod(0o600)
    return path.read_text().strip()


def mint(
    secret: str, subject: str, scopes: str = "", ttl_seconds: int = 86_400, **claims: Any
) -> str:
    now = int(time.time())
    payload = {
        "sub": subject,
        "iss": issuer(),
        "aud": audience(),
        "iat": now,
        "exp": now + ttl_seconds,
        **claims,
    }
    if scopes:
        payload["scope"] = scopes
    return jwt.encode(payload, secret, algorithm="HS256")


def verify(secret: str, token: str) -> dict[str, Any]:
    """Claims of a valid token; raises InvalidToken otherwise.

    The check is the one the read function runs on a token sent with a read
    (leaderboard/api/bearer.py), in its HS256 mode: the signature (HS256 with this secret only:
    `none`, other HMACs and RSA headers are refused), `exp`, `nbf` and `iat` (none in the
    future; no leeway), `iss`, the audience (`aud`, or `client_id` without `aud`, as API
    Gateway), a non-empty string `sub`, times that are JSON numbers, and a `scope` that is a
    space-separated string. One check for both, so a token is judged alike on every route."""
    return _verifier(secret, issuer(), audience()).claims(token)


@functools.lru_cache(maxsize=4)
def _verifier(secret: str, issuer: str, audience: str) -> TokenVerifier:
    audiences = frozenset(a.strip() for a in audience.split(",") if a.strip())
    return TokenVerifier(TokenSettings(issuer=issuer, audiences=audiences, secret=secret))
