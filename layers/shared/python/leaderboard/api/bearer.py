"""Bearer tokens checked by the function itself, by the rules API Gateway's JWT authorizer
applies on the routes it guards.

An HTTP API route either has an authorizer, which then demands a token, or none, which passes
the Authorization header through unchecked. The reads stay open to anonymous clients yet must
know who reads when a token is sent, so the read function verifies that token here. The local
gateway verifies its authorized routes with the same code (devstack/tokens.py), so a token is
judged alike on every route.

PyJWT and cryptography are imported with the first token: the cold start and anonymous reads
never load them.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from typing import Any

from leaderboard.domain.auth import Caller, caller_from_claims
from leaderboard.domain.errors import InvalidToken, Unavailable
from leaderboard.settings import TokenSettings

# RFC 6750 credentials with a compact JWS: `Bearer`, one space, three base64url segments.
_BEARER = re.compile(r"Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*)")
# An unknown `kid` fetches the issuer's keys again at most this often: a stream of made-up kids
# costs the issuer one request a minute per execution environment, not one per request.
REFETCH_SECONDS = 60.0
# After a failed fetch, tokens that need it are answered 503 at once until this has passed, so
# an unreachable issuer does not hold every request for the fetch timeout.
RETRY_SECONDS = 5.0
# Keys older than this are fetched again on the next token (API Gateway caches them up to two
# hours): a key the issuer withdrew stops being trusted. If that fetch fails, the known keys
# go on serving.
MAX_KEY_AGE_SECONDS = 3600.0
MAX_JWKS_BYTES = 1 << 20
MIN_RSA_BITS = 2048  # what NIST allows for signatures now; Cognito's keys are 2048 bits
MAX_CACHED_TOKENS = 1024
_TIME_CLAIMS = ("exp", "nbf", "iat")

_Verified = tuple[dict[str, Any], Caller, int]  # claims, caller, exp


def bearer_token(authorization: str) -> str | None:
    """The token of an Authorization value that is exactly `Bearer <compact JWS>` (surrounding
    blanks aside); anything else (another scheme, `bearer`, two spaces, two headers joined with
    a comma, as API Gateway joins repeated headers) is None."""
    found = _BEARER.fullmatch(authorization.strip(" \t"))
    return found.group(1) if found else None


class TokenVerifier:
    """Verifies bearer tokens by one deployment's rules (TokenSettings) and keeps, for the
    execution environment, the issuer's keys and each verified token until it expires: a
    client sends the same token with every read, so the signature is checked once."""

    def __init__(
        self,
        settings: TokenSettings,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.settings = settings
        self._clock = clock
        self._monotonic = monotonic
        self._verified: dict[str, _Verified] = {}
        self._keys: dict[str, Any] | None = None
        self._fetched_at = 0.0
        self._next_fetch = -math.inf
        self._fetch_failed = False
        self.fetches = 0  # requests for the issuer's keys so far

    def caller(self, token: str) -> Caller:
        """The caller a valid token names; InvalidToken (401) otherwise, Unavailable (503) when
        the issuer's keys cannot be fetched."""
        return self._verify(token)[1]

    def claims(self, token: str) -> dict[str, Any]:
        """The claims of a valid token, as `caller` judges it."""
        return dict(self._verify(token)[0])

    def _verify(self, token: str) -> _Verified:
        hit = self._verified.get(token)
        if hit is not None and hit[2] > self._clock():
            return hit
        claims = self._decode(token)
        verified = (claims, caller_from_claims(claims, None), int(claims["exp"]))
        self._remember(token, verified)
        return verified

    def _decode(self, token: str) -> dict[str, Any]:
        import jwt

        settings = self.settings
        try:
            key: Any = settings.secret or self._key_for(jwt.get_unverified_header(token))
            claims: dict[str, Any] = jwt.decode(
                token,
                key,
                algorithms=[settings.algorithm],  # one, fixed by the deployment, never the token
                issuer=settings.issuer,
                options={"require": ["exp", "iss", "sub"], "verify_aud": False},
            )
        except (jwt.PyJWTError, ValueError, TypeError, ArithmeticError, RecursionError) as exc:
            # Malformed input of any kind is the client's: 401, never a 500.
            raise InvalidToken(f"{type(exc).__name__}: {exc}") from None
        _check_claims(claims, settings.audiences)
        return claims

    def _key_for(self, header: dict[str, Any]) -> Any:
        """The issuer's key that signed the token: RS256 only, named by `kid`."""
        if header.get("alg") != "RS256":
            raise InvalidToken(f"alg {header.get('alg')!r} is not RS256")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid:
            raise InvalidToken("the token names no key (kid)")
        now = self._monotonic()
        keys = self._keys
        if keys is not None and kid in keys and now - self._fetched_at < MAX_KEY_AGE_SECONDS:
            return keys[kid]
        if now >= self._next_fetch:
            try:
                self._fetch(now)
            except Unavailable:
                if keys is None or kid not in keys:
                    raise
        keys = self._keys
        if keys is not None and kid in keys:
            return keys[kid]
        if keys is None or self._fetch_failed:
            raise Unavailable(
                "the token issuer's keys cannot be fetched",
                retry_after=math.ceil(self._next_fetch - now),
            )
        raise InvalidToken(f"no key {kid!r} in the issuer's key set")

    def _fetch(self, now: float) -> None:
        assert self.settings.jwks_url is not None
        self.fetches += 1
        try:
            keys = read_jwks(self.settings.jwks_url, self.settings.jwks_timeout_seconds)
        except Unavailable:
            self._fetch_failed, self._next_fetch = True, now + RETRY_SECONDS
            raise
        self._keys, self._fetched_at = keys, now
        self._fetch_failed, self._next_fetch = False, now + REFETCH_SECONDS

    def _remember(self, token: str, verified: _Verified) -> None:
        if len(self._verified) >= MAX_CACHED_TOKENS:
            now = self._clock()
            for stale in [t for t, (_, _, exp) in self._verified.items() if exp <= now]:
                del self._verified[stale]
            while len(self._verified) >= MAX_CACHED_TOKENS:
                del self._verified[next(iter(self._verified))]  # the oldest
        self._verified[token] = verified


def _check_claims(claims: dict[str, Any], audiences: frozenset[str]) -> None:
    """What PyJWT lets through but the authorizer or the handlers would misread: an empty or
    non-string `sub`, times that are not JSON numbers (PyJWT takes "123" and true), a `scope`
    that is not a space-separated string, and the audience as API Gateway checks it: `aud`
    (a string or a list of strings) naming an accepted audience, or, only when there is no
    `aud` (Cognito access tokens), `client_id` naming one."""
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise InvalidToken("sub must be a non-empty string")
    for name in _TIME_CLAIMS:
        value = claims.get(name)
        if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InvalidToken(f"{name} must be a number")
    if "scope" in claims and not isinstance(claims["scope"], str):
        raise InvalidToken("scope must be a space-separated string")
    if "aud" in claims:
        aud = claims["aud"]
        named = [aud] if isinstance(aud, str) else aud
        if (
            not isinstance(named, list)
            or not all(isinstance(a, str) for a in named)
            or audiences.isdisjoint(named)
        ):
            raise InvalidToken("aud names no accepted audience")
    elif not isinstance(claims.get("client_id"), str) or claims["client_id"] not in audiences:
        raise InvalidToken("neither aud nor client_id names an accepted audience")


def read_jwks(url: str, timeout: float) -> dict[str, Any]:
    """The issuer's RS256 signing keys by `kid`, from its JWK set at `url`.

    Whatever keeps a usable key set from arriving (no route, a timeout, an HTTP error, a
    redirect, a body that is too large, slow or not a key set) is the issuer being
    unavailable: a token cannot be judged without its keys, so that is a 503, not a 401.
    Keys that are not public RSA signing keys for RS256, of 2048 bits or more, are skipped."""
    import http.client
    import json
    import urllib.request

    import jwt
    from jwt.algorithms import RSAAlgorithm

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # a 3xx is an error: keys come from the configured URL only

    opener = urllib.request.build_opener(NoRedirect)
    # TokenSettings admits https URLs only (http on the loopback): no file: or other schemes.
    request = urllib.request.Request(url, headers={"Accept": "application/json"})  # noqa: S310
    deadline = time.monotonic() + timeout
    try:
        with opener.open(request, timeout=timeout) as response:
            body = b""
            while chunk := response.read(65536):
                body += chunk
                if len(body) > MAX_JWKS_BYTES or time.monotonic() > deadline:
                    raise ValueError("the key set is too large or arrives too slowly")
        document = json.loads(body)
    except (OSError, http.client.HTTPException, ValueError, RecursionError) as exc:
        raise Unavailable(
            "the token issuer's keys cannot be fetched", retry_after=math.ceil(RETRY_SECONDS)
        ) from exc
    found = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(found, list):
        raise Unavailable(
            "the token issuer's key set has no keys", retry_after=math.ceil(RETRY_SECONDS)
        )
    keys: dict[str, Any] = {}
    for jwk in found:
        if not isinstance(jwk, dict) or not isinstance(jwk.get("kid"), str) or not jwk["kid"]:
            continue
        if jwk.get("kty") != "RSA" or "d" in jwk:  # public RSA keys only
            continue
        if jwk.get("use", "sig") != "sig" or jwk.get("alg", "RS256") != "RS256":
            continue
        try:
            key = RSAAlgorithm.from_jwk(jwk)
        except (jwt.PyJWTError, ValueError, TypeError, KeyError):
            continue
        if key.key_size >= MIN_RSA_BITS:
            keys[jwk["kid"]] = key
    return keys
