"""Hostile and odd credentials, made by hand: tokens every JWT check here must refuse (the
local gateway's authorizer, and the read function's own check of an optional token), and
Authorization values that are not exactly `Bearer <token>`. docs/API.md, "Authentication",
says why each is refused."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import time
from collections.abc import Callable
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

from devstack import tokens


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def claims(**changes: Any) -> dict[str, Any]:
    """Valid player claims, with `changes` applied (a value of ... removes the claim)."""
    now = int(time.time())
    claims = {
        "sub": "p-1",
        "iss": tokens.issuer(),
        "aud": tokens.audience(),
        "iat": now - 5,
        "exp": now + 600,
    }
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not ...}


def jws(
    header: dict[str, Any] | bytes,
    payload: dict[str, Any] | bytes,
    key: str,
    digest: Callable[[], Any] | None = hashlib.sha256,
) -> str:
    """A compact JWS signed with HMAC-`digest` over whatever header and payload it is given
    (digest None: no signature at all)."""
    head = header if isinstance(header, bytes) else json.dumps(header).encode()
    body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    signing_input = f"{b64(head)}.{b64(body)}"
    if digest is None:
        return signing_input + "."
    signature = hmac.new(key.encode(), signing_input.encode(), digest).digest()
    return f"{signing_input}.{b64(signature)}"


HS256 = {"alg": "HS256", "typ": "JWT"}


@functools.cache
def bad_tokens(secret: str) -> dict[str, str]:
    """Bearer tokens the authorizer must refuse (the header is `Bearer <token>`)."""
    good = claims()
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return {
        # alg none, with and without a signature, in any spelling
        "alg-none-unsigned": jws({"alg": "none"}, good, secret, None),
        "alg-none-signed": jws({"alg": "none"}, good, secret),
        "alg-None-unsigned": jws({"alg": "None"}, good, secret, None),
        "alg-NONE-signed": jws({"alg": "NONE"}, good, secret),
        "alg-missing": jws({"typ": "JWT"}, good, secret),
        "alg-null": jws({"alg": None}, good, secret),
        # algorithm confusion: the right secret, the wrong algorithm
        "hs384-with-the-secret": jws({"alg": "HS384"}, good, secret, hashlib.sha384),
        "hs512-with-the-secret": jws({"alg": "HS512"}, good, secret, hashlib.sha512),
        "rs256-header-hmac-signature": jws({"alg": "RS256"}, good, secret),
        "rs256-really-signed": jwt.encode(good, rsa_key, algorithm="RS256"),
        "hs256-header-sha512-signature": jws(HS256, good, secret, hashlib.sha512),
        # the right algorithm, the wrong key, or a payload changed under a good signature
        "hs256-another-key": jws(HS256, good, secret + "-not"),
        "hs256-empty-key": jws(HS256, good, ""),
        "payload-swapped": swap_payload(
            jws(HS256, good, secret), claims(scope="leaderboard/admin")
        ),
        "signature-stripped": jws(HS256, good, secret).rsplit(".", 1)[0] + ".",
        # time
        "expired": jws(HS256, claims(exp=int(time.time()) - 5), secret),
        "exp-missing": jws(HS256, claims(exp=...), secret),
        "exp-a-string": jws(HS256, claims(exp=str(int(time.time()) + 600)), secret),
        "exp-true": jws(HS256, claims(exp=True), secret),
        "exp-overflows": jws(
            HS256, json.dumps(claims(exp=0)).replace('"exp": 0', '"exp": 1e400').encode(), secret
        ),
        # a day ahead: the tokens are made once per secret (cached) and must stay in the future
        # however long the suite runs after
        "nbf-future": jws(HS256, claims(nbf=int(time.time()) + 86_400), secret),
        "iat-future": jws(HS256, claims(iat=int(time.time()) + 86_400), secret),
        "iat-a-list": jws(HS256, claims(iat=[1]), secret),
        # issuer and audience
        "iss-wrong": jws(HS256, claims(iss="https://evil.example"), secret),
        "iss-missing": jws(HS256, claims(iss=...), secret),
        "iss-a-list": jws(HS256, claims(iss=[tokens.issuer()]), secret),
        "aud-wrong": jws(HS256, claims(aud="someone-else"), secret),
        "aud-missing": jws(HS256, claims(aud=...), secret),
        "aud-list-without-ours": jws(HS256, claims(aud=["a", "b"]), secret),
        # the subject
        "sub-missing": jws(HS256, claims(sub=...), secret),
        "sub-null": jws(HS256, claims(sub=None), secret),
        "sub-empty": jws(HS256, claims(sub=""), secret),
        "sub-a-number": jws(HS256, claims(sub=12345), secret),
        "sub-a-list": jws(HS256, claims(sub=["p-1"]), secret),
        "sub-duplicated-as-number": jws(
            HS256, json.dumps(claims())[:-1].encode() + b', "sub": 7}', secret
        ),
        # scopes of the wrong type (a scope is a space-separated string)
        "scope-a-list": jws(HS256, claims(scope=["leaderboard/admin"]), secret),
        "scope-a-number": jws(HS256, claims(scope=1), secret),
        "scope-null": jws(HS256, claims(scope=None), secret),
        "scope-an-object": jws(HS256, claims(scope={"leaderboard/admin": True}), secret),
        "scope-true": jws(HS256, claims(scope=True), secret),
        # malformed
        "empty": "",
        "one-segment": "abc",
        "two-segments": jws(HS256, good, secret).rsplit(".", 1)[0],
        "four-segments": jws(HS256, good, secret) + ".abc",
        "only-dots": "..",
        "bad-base64": "@@@.@@@.@@@",
        "base64-padding": jws(HS256, good, secret).replace(".", "=.", 1),
        "header-not-json": jws(b"{not json", good, secret),
        "payload-not-json": jws(HS256, b"{not json", secret),
        "payload-an-array": jws(HS256, b"[1, 2]", secret),
        "header-an-array": jws(b'["HS256"]', good, secret),
        "payload-not-utf8": jws(HS256, b"\xff\xfe\xfd", secret),
        "payload-nested-2500-deep": jws(HS256, b"[" * 2500 + b"]" * 2500, secret),
        "crit-header": jws({"alg": "HS256", "crit": ["exp"]}, good, secret),
        "kid-an-object": jws({"alg": "HS256", "kid": {"x": 1}}, good, secret),
        "oversized-garbage-9KiB": "a" * 3000 + "." + "b" * 3000 + "." + "c" * 3000,
    }


def swap_payload(token: str, claims: dict[str, Any]) -> str:
    head, _, signature = token.split(".")
    return f"{head}.{b64(json.dumps(claims).encode())}.{signature}"


def bad_headers(secret: str) -> dict[str, list[str]]:
    """Authorization header lines (several: the header repeated) around a *valid* token that
    must be refused: only `Bearer <token>` is accepted."""
    good = tokens.mint(secret, "p-1")
    other = tokens.mint(secret, "p-2")
    basic = base64.b64encode(b"p-1:" + secret.encode()).decode()
    return {
        "no-header": [],
        "empty-header": [""],
        "scheme-alone": ["Bearer"],
        "scheme-and-spaces": ["Bearer     "],
        "token-without-scheme": [good],
        "lowercase-scheme": [f"bearer {good}"],
        "uppercase-scheme": [f"BEARER {good}"],
        "two-spaces": [f"Bearer  {good}"],
        "a-tab": [f"Bearer\t{good}"],
        "no-space": [f"Bearer{good}"],
        "trailing-words": [f"Bearer {good} extra"],
        "trailing-comma": [f"Bearer {good},"],
        "quoted-token": [f'Bearer "{good}"'],
        "basic-scheme": [f"Basic {basic}"],
        "token-scheme": [f"Token {good}"],
        "two-schemes": [f"Basic {basic}, Bearer {good}"],
        "twice-valid-then-garbage": [f"Bearer {good}", "Bearer garbage"],
        "twice-garbage-then-valid": ["Bearer garbage", f"Bearer {good}"],
        "twice-two-valid-tokens": [f"Bearer {good}", f"Bearer {other}"],
        "twice-the-same-token": [f"Bearer {good}", f"Bearer {good}"],
    }


NAMES_ONLY = "a-secret-just-for-the-test-ids-0123456789"
BAD_TOKENS = list(bad_tokens(NAMES_ONLY))
BAD_HEADERS = list(bad_headers(NAMES_ONLY))
