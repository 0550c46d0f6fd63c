"""HS256 bearer tokens for the local stack, shaped like the ones the AWS authorizer accepts."""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path
from typing import Any

import jwt

DEFAULT_ISSUER = "leaderboard-local"
DEFAULT_AUDIENCE = "leaderboard"


def issuer() -> str:
    return os.environ.get("JWT_ISSUER", DEFAULT_ISSUER)


def audience() -> str:
    return os.environ.get("JWT_AUDIENCE", DEFAULT_AUDIENCE)


def local_secret(data_dir: Path) -> str:
    """JWT_SECRET, or a random secret kept in the local data folder (never in the repo)."""
    if os.environ.get("JWT_SECRET"):
        return os.environ["JWT_SECRET"]
    path = data_dir / "jwt-secret"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
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
    """Claims of a valid token; raises jwt.InvalidTokenError otherwise.

    PyJWT checks the signature (HS256 only: `none`, other HMACs and RSA headers are refused),
    `exp`, `nbf` and `iat` (none in the future; no leeway), `iss`, `aud` and a string `sub`.
    On top, claims the handlers would misread: an empty `sub`, times that are not JSON numbers
    (PyJWT takes "123"), and a `scope` that is not a space-separated string.
    """
    claims: dict[str, Any] = jwt.decode(
        token,
        secret,
        algorithms=["HS256"],
        audience=audience(),
        issuer=issuer(),
        options={"require": ["exp", "sub", "iss", "aud"]},
    )
    if not claims["sub"]:
        raise jwt.exceptions.InvalidSubjectError("sub must not be empty")
    for name in ("exp", "nbf", "iat"):
        value = claims.get(name)
        if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise jwt.DecodeError(f"{name} must be a number")
    if "scope" in claims and not isinstance(claims["scope"], str):
        raise jwt.InvalidTokenError("scope must be a space-separated string")
    return claims
