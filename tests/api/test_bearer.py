"""The bearer-token check the read function runs itself (leaderboard/api/bearer.py): what it
accepts and refuses in each mode, with real tokens; for RS256, keys made here and served over
real HTTP (tests/support/jwks.py), with rotation, outages and the refetch rate limit.

The local gateway's authorizer runs the same check (devstack/tokens.py): the hostile tokens of
tests/support/hostile_tokens.py are refused here directly, there over HTTP
(tests/devstack/test_auth_edges.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from devstack import tokens
from leaderboard.api.bearer import (
    MAX_KEY_AGE_SECONDS,
    REFETCH_SECONDS,
    RETRY_SECONDS,
    TokenVerifier,
    bearer_token,
)
from leaderboard.domain.errors import ConfigurationError, InvalidToken, Unavailable
from leaderboard.settings import TokenSettings
from tests.support import hostile_tokens as hostile
from tests.support.jwks import (
    AUDIENCE,
    ISSUER,
    Answer,
    JwksServer,
    public_jwk,
    rs256,
    rsa_key,
)

SECRET = "a-secret-for-the-verifier-tests-only-0123456789"


def _hs256_settings() -> TokenSettings:
    return TokenSettings(
        issuer=tokens.issuer(), audiences=frozenset({tokens.audience()}), secret=SECRET
    )


def _hs256(**changes: Any) -> str:
    return jwt.encode(hostile.claims(**changes), SECRET, algorithm="HS256")


class Clock:
    """A monotonic clock the test moves: a minute passes without waiting for it."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- the Authorization header ------------------------------------------------------------------


def test_only_exactly_bearer_and_a_compact_jws_is_a_token() -> None:
    token = _hs256()
    assert bearer_token(f"Bearer {token}") == token
    assert bearer_token(f"  Bearer {token}\t") == token  # the blanks around are not the value


@pytest.mark.parametrize("case", hostile.BAD_HEADERS)
def test_no_other_authorization_value_is_a_token(case: str) -> None:
    """Repeated headers arrive joined with a comma, as API Gateway joins them."""
    assert bearer_token(",".join(hostile.bad_headers(SECRET)[case])) is None


# --- HS256 (the local stack) -------------------------------------------------------------------


@pytest.mark.parametrize("case", hostile.BAD_TOKENS)
def test_every_hostile_token_is_refused_in_hs256_mode(case: str) -> None:
    verifier = TokenVerifier(_hs256_settings())
    with pytest.raises(InvalidToken) as refused:
        verifier.caller(hostile.bad_tokens(SECRET)[case])
    assert refused.value.body() == {"message": "Unauthorized"} and refused.value.status == 401


def test_a_valid_token_names_the_caller_and_its_scopes() -> None:
    verifier = TokenVerifier(_hs256_settings())
    caller = verifier.caller(_hs256(sub="ada", scope="leaderboard/server profile"))
    assert caller.subject == "ada"
    assert caller.scopes == {"leaderboard/server", "profile"} and caller.is_server
    assert not verifier.caller(_hs256(sub="bob")).scopes


def _from_now(changes: dict[str, Any]) -> dict[str, Any]:
    """Times given in seconds from when the test runs (not from collection: a whole run takes
    longer than their margins)."""
    now = int(time.time())
    times = ("exp", "nbf", "iat")
    return {k: now + v if k in times and type(v) in (int, float) else v for k, v in changes.items()}


@pytest.mark.parametrize(
    "changes",
    [
        {"aud": ["another-api", tokens.audience()]},
        {"scope": ""},
        {"exp": 60.5},
        {"nbf": -60},
        # Cognito access tokens carry client_id and no aud: API Gateway matches client_id then
        {"aud": ..., "client_id": tokens.audience()},
    ],
    ids=["aud-list-with-ours", "scope-empty", "exp-float", "nbf-past", "client-id-without-aud"],
)
def test_these_valid_tokens_are_accepted(changes: dict[str, Any]) -> None:
    token = _hs256(**_from_now(changes))
    assert TokenVerifier(_hs256_settings()).caller(token).subject == "p-1"


@pytest.mark.parametrize(
    "changes",
    [
        {"aud": ..., "client_id": "another-client"},
        {"aud": ..., "client_id": ["leaderboard"]},
        {"aud": "someone-else", "client_id": tokens.audience()},  # aud wins when present
        {"aud": None},
        {"aud": []},
        {"aud": [tokens.audience(), 7]},
        {"exp": ...},
        {"iss": ...},
        {"iss": "leaderboard-local-2"},
    ],
    ids=[
        "client-id-not-ours",
        "client-id-a-list",
        "aud-wrong-client-id-ours",
        "aud-null",
        "aud-empty-list",
        "aud-list-with-a-number",
        "exp-missing",
        "iss-missing",
        "iss-another",
    ],
)
def test_these_tokens_are_refused(changes: dict[str, Any]) -> None:
    with pytest.raises(InvalidToken):
        TokenVerifier(_hs256_settings()).caller(_hs256(**changes))


@pytest.mark.slow  # waits for the token to expire
def test_a_verified_token_is_kept_until_it_expires_and_refused_after() -> None:
    verifier = TokenVerifier(_hs256_settings())
    token = _hs256(exp=int(time.time()) + 2)
    first = verifier.caller(token)
    assert verifier.caller(token) is first  # the kept result: checked once
    time.sleep(max(0.0, int(time.time()) + 2 - time.time()) + 1.05)
    with pytest.raises(InvalidToken):
        verifier.caller(token)


def test_the_secret_alone_decides_the_mode() -> None:
    """With a secret, an RS256 token is refused even if its issuer publishes keys: the
    deployment's one algorithm, never the token's choice."""
    settings = _hs256_settings()
    assert settings.algorithm == "HS256"
    with pytest.raises(InvalidToken):
        TokenVerifier(settings).caller(rs256(rsa_key(), "k1", iss=tokens.issuer()))


# --- the settings ------------------------------------------------------------------------------


@pytest.fixture
def token_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in ("JWT_SECRET", "JWT_ISSUER", "JWT_AUDIENCE", "JWT_JWKS_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JWT_ISSUER", "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_x")
    monkeypatch.setenv("JWT_AUDIENCE", "client-a, client-b")
    return monkeypatch


def test_settings_in_aws_are_rs256_with_the_issuers_keys(token_env: pytest.MonkeyPatch) -> None:
    settings = TokenSettings.from_env()
    assert settings.algorithm == "RS256" and settings.secret is None
    assert settings.audiences == {"client-a", "client-b"}
    assert settings.jwks_url == (
        "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_x/.well-known/jwks.json"
    )
    token_env.setenv("JWT_ISSUER", "https://tenant.example/")  # a trailing slash is not doubled
    assert TokenSettings.from_env().jwks_url == "https://tenant.example/.well-known/jwks.json"
    token_env.setenv("JWT_JWKS_URL", "https://tenant.example/v1/keys")
    assert TokenSettings.from_env().jwks_url == "https://tenant.example/v1/keys"


def test_settings_with_a_secret_are_hs256_only(token_env: pytest.MonkeyPatch) -> None:
    token_env.setenv("JWT_SECRET", SECRET)
    token_env.setenv("JWT_ISSUER", "leaderboard-local")  # not a URL: no key set is derived
    token_env.setenv("JWT_JWKS_URL", "https://ignored.example/keys")
    settings = TokenSettings.from_env()
    assert (settings.algorithm, settings.secret, settings.jwks_url) == ("HS256", SECRET, None)


@pytest.mark.parametrize(
    "name,value",
    [
        ("JWT_ISSUER", ""),
        ("JWT_AUDIENCE", " , "),
        ("JWT_JWKS_URL", "http://issuer.example/keys"),  # plain http beyond the loopback
        ("JWT_JWKS_URL", "file:///etc/keys.json"),
        ("JWT_JWKS_URL", "https://"),
    ],
)
def test_wrong_settings_stop_the_cold_start(
    token_env: pytest.MonkeyPatch, name: str, value: str
) -> None:
    token_env.setenv(name, value)
    with pytest.raises(ConfigurationError, match=name):
        TokenSettings.from_env()


def test_an_issuer_that_is_no_url_needs_a_key_set_url(token_env: pytest.MonkeyPatch) -> None:
    token_env.setenv("JWT_ISSUER", "leaderboard-local")
    with pytest.raises(ConfigurationError, match="JWT_JWKS_URL"):
        TokenSettings.from_env()


# --- RS256 (AWS): the issuer's keys over HTTP --------------------------------------------------
# These start an HTTP server (the issuer's key set), so `make test-fast` leaves them out.


@pytest.fixture(scope="module")
def keys() -> dict[str, Any]:
    return {"k1": rsa_key(), "k2": rsa_key(), "other": rsa_key()}


@pytest.fixture
def issuer(keys: dict[str, Any]) -> Iterator[JwksServer]:
    server = JwksServer()
    server.answer = Answer(keys=[public_jwk(keys["k1"], "k1")])
    yield server
    server.close()


def _rs256_settings(url: str, timeout: float = 2.0) -> TokenSettings:
    return TokenSettings(
        issuer=ISSUER, audiences=frozenset({AUDIENCE}), jwks_url=url, jwks_timeout_seconds=timeout
    )


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def verifier(issuer: JwksServer, clock: Clock) -> TokenVerifier:
    return TokenVerifier(_rs256_settings(issuer.url), monotonic=clock)


@pytest.mark.server
def test_a_token_signed_by_the_issuers_key_is_valid(
    verifier: TokenVerifier, issuer: JwksServer, keys: dict[str, Any]
) -> None:
    assert issuer.requests == 0  # nothing is fetched before the first token
    caller = verifier.caller(rs256(keys["k1"], "k1", sub="ada", scope="leaderboard/admin"))
    assert (caller.subject, caller.is_admin) == ("ada", True)
    assert verifier.caller(rs256(keys["k1"], "k1", sub="bob")).subject == "bob"
    assert issuer.requests == verifier.fetches == 1  # kept for the execution environment


@pytest.mark.server
@pytest.mark.parametrize(
    "changes",
    [
        {"exp": -5},
        {"nbf": 120},
        {"iat": 120},
        {"iss": "https://issuer.test/another-pool"},
        {"aud": "someone-else"},
        {"aud": ..., "client_id": "someone-else"},
        {"sub": ...},
        {"sub": ""},
        {"sub": 12345},
        {"scope": ["leaderboard/admin"]},
        {"exp": "9999999999"},
    ],
    ids=[
        "expired",
        "nbf-future",
        "iat-future",
        "iss-wrong",
        "aud-wrong",
        "client-id-wrong",
        "sub-missing",
        "sub-empty",
        "sub-a-number",
        "scope-a-list",
        "exp-a-string",
    ],
)
def test_claims_are_checked_as_in_hs256_mode(
    changes: dict[str, Any], verifier: TokenVerifier, keys: dict[str, Any]
) -> None:
    with pytest.raises(InvalidToken):
        verifier.caller(rs256(keys["k1"], "k1", **_from_now(changes)))


@pytest.mark.server
def test_cognito_access_tokens_match_client_id(
    verifier: TokenVerifier, keys: dict[str, Any]
) -> None:
    token = rs256(keys["k1"], "k1", aud=..., client_id=AUDIENCE, scope="leaderboard/server")
    assert verifier.caller(token).is_server


def _hmac_token(header: dict[str, Any], secret: bytes) -> str:
    head = hostile.b64(json.dumps(header).encode())
    body = hostile.b64(json.dumps(hostile.claims(iss=ISSUER, aud=AUDIENCE)).encode())
    signature = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{hostile.b64(signature)}"


@pytest.mark.server
def test_no_other_algorithm_and_no_other_key_is_accepted(
    verifier: TokenVerifier, issuer: JwksServer, keys: dict[str, Any]
) -> None:
    """Algorithm confusion: an HS256 token whose secret is the issuer's public key (what a
    verifier that let the token choose the algorithm would accept) is refused, before any
    fetch; so are alg none, the other RSA sizes, a foreign key under our kid, and no kid."""
    pem = (
        keys["k1"]
        .public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    jwk_json = json.dumps(public_jwk(keys["k1"], "k1")).encode()
    ours = hostile.claims(iss=ISSUER, aud=AUDIENCE)
    refused = [
        _hmac_token({"alg": "HS256", "kid": "k1", "typ": "JWT"}, pem),
        _hmac_token({"alg": "HS256", "kid": "k1"}, jwk_json),
        hostile.jws({"alg": "none", "kid": "k1"}, ours, "", None),
        jwt.encode(ours, keys["k1"], "RS512", {"kid": "k1"}),
    ]
    for token in refused:
        with pytest.raises(InvalidToken):
            verifier.caller(token)
    assert issuer.requests == 0, "a token the mode cannot accept costs no fetch"
    for token in [rs256(keys["other"], "k1"), rs256(keys["k1"], None), rs256(keys["k1"], "")]:
        with pytest.raises(InvalidToken):
            verifier.caller(token)


@pytest.mark.server
def test_a_rotated_key_is_picked_up_and_unknown_kids_refetch_once_a_minute(
    verifier: TokenVerifier, issuer: JwksServer, keys: dict[str, Any], clock: Clock
) -> None:
    assert verifier.caller(rs256(keys["k1"], "k1")).subject == "p-1"
    # The issuer rotates: k2 is published and signs new tokens; k1 is still listed.
    issuer.answer = Answer(keys=[public_jwk(keys["k1"], "k1"), public_jwk(keys["k2"], "k2")])
    clock.now += REFETCH_SECONDS - 1  # the last fetch was under a minute ago
    with pytest.raises(InvalidToken):
        verifier.caller(rs256(keys["k2"], "k2"))
    assert issuer.requests == 1
    clock.now += 1
    assert verifier.caller(rs256(keys["k2"], "k2", sub="new")).subject == "new"
    assert verifier.caller(rs256(keys["k1"], "k1", sub="old")).subject == "old"
    assert issuer.requests == 2


@pytest.mark.server
def test_made_up_kids_cost_the_issuer_one_request_a_minute(
    verifier: TokenVerifier, issuer: JwksServer, keys: dict[str, Any], clock: Clock
) -> None:
    for n in range(50):
        with pytest.raises(InvalidToken):
            verifier.caller(rs256(keys["other"], f"made-up-{n}"))
        clock.now += 1
    assert issuer.requests == 1  # the first token fetched; the next chance is after a minute
    clock.now += REFETCH_SECONDS
    with pytest.raises(InvalidToken):
        verifier.caller(rs256(keys["other"], "made-up-again"))
    assert issuer.requests == 2


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@pytest.mark.server
def test_an_unreachable_issuer_is_503_and_is_not_asked_again_at_once(
    issuer: JwksServer, keys: dict[str, Any], clock: Clock
) -> None:
    down = TokenVerifier(
        _rs256_settings(f"http://127.0.0.1:{_closed_port()}/jwks"), monotonic=clock
    )
    token = rs256(keys["k1"], "k1")
    with pytest.raises(Unavailable) as unavailable:
        down.caller(token)
    assert unavailable.value.status == 503 and unavailable.value.retry_after >= 1
    clock.now += RETRY_SECONDS - 1
    with pytest.raises(Unavailable) as again:
        down.caller(token)
    assert down.fetches == 1 and again.value.retry_after == 1  # answered at once, no new try
    clock.now += 1
    # reachable again (the same verifier, now pointed at a live issuer's keys)
    object.__setattr__(down, "settings", _rs256_settings(issuer.url))
    assert down.caller(token).subject == "p-1"
    assert down.fetches == 2


@pytest.mark.server
@pytest.mark.parametrize(
    "answer",
    [
        Answer(status=500),
        Answer(status=404),
        Answer(body=b"<html>not json</html>"),
        Answer(body=b'{"no": "keys"}'),
        Answer(body=b"[" * 100_000 + b"]" * 100_000),
        Answer(body=b" " * (1 << 20) + b"{}"),
        Answer(redirect_to="http://127.0.0.1:9/elsewhere"),
        Answer(delay=1.0),
    ],
    ids=["500", "404", "not-json", "no-keys", "nested-deep", "over-1MiB", "redirect", "slow"],
)
def test_an_issuer_that_answers_no_key_set_is_503(
    answer: Answer, issuer: JwksServer, keys: dict[str, Any], clock: Clock
) -> None:
    issuer.answer = answer
    verifier = TokenVerifier(_rs256_settings(issuer.url, timeout=0.3), monotonic=clock)
    with pytest.raises(Unavailable):
        verifier.caller(rs256(keys["k1"], "k1"))


@pytest.mark.server
def test_keys_that_are_no_rs256_signing_keys_are_ignored(
    issuer: JwksServer, keys: dict[str, Any], clock: Clock
) -> None:
    good = public_jwk(keys["k1"], "k1")
    private = jwt.algorithms.RSAAlgorithm.to_jwk(keys["k2"], as_dict=True)
    issuer.answer = Answer(
        keys=[
            {**public_jwk(keys["k2"], "enc"), "use": "enc"},
            {**public_jwk(keys["k2"], "rs512"), "alg": "RS512"},
            {**public_jwk(keys["k2"], "ec"), "kty": "EC"},
            {**private, "kid": "private", "use": "sig", "alg": "RS256"},
            {**public_jwk(keys["k2"], "broken"), "n": "not base64url!"},
            {**public_jwk(keys["k2"], "")},
            "not an object",
            good,
        ]
    )
    verifier = TokenVerifier(_rs256_settings(issuer.url), monotonic=clock)
    for kid in ("enc", "rs512", "ec", "private", "broken"):
        with pytest.raises(InvalidToken):
            verifier.caller(rs256(keys["k2"], kid))
    assert verifier.caller(rs256(keys["k1"], "k1")).subject == "p-1"


@pytest.mark.server
def test_keys_are_fetched_again_after_an_hour_and_a_withdrawn_key_is_refused(
    verifier: TokenVerifier, issuer: JwksServer, keys: dict[str, Any], clock: Clock
) -> None:
    assert verifier.caller(rs256(keys["k1"], "k1", sub="a")).subject == "a"
    # The issuer is down when the keys are an hour old: the known keys go on serving.
    issuer.answer = Answer(status=503)
    clock.now += MAX_KEY_AGE_SECONDS
    assert verifier.caller(rs256(keys["k1"], "k1", sub="b")).subject == "b"
    assert issuer.requests == 2
    # Back, without k1 (withdrawn): the next fetch drops it.
    issuer.answer = Answer(keys=[public_jwk(keys["k2"], "k2")])
    clock.now += RETRY_SECONDS
    with pytest.raises(InvalidToken):
        verifier.caller(rs256(keys["k1"], "k1", sub="c"))
    assert issuer.requests == 3


def test_the_module_loads_no_jwt_library_until_a_token_comes() -> None:
    """The read function's cold start and anonymous reads stay as lean as before. (As in
    Lambda, LAMBDA_TASK_ROOT is set: without it the X-Ray SDK makes a botocore client at
    import, and botocore may load cryptography for its own reasons.)"""
    import subprocess

    probe = (
        "import sys; import leaderboard.api.http, leaderboard.api.bearer;"
        "print(sorted(m for m in ('jwt', 'cryptography', 'urllib.request') if m in sys.modules))"
    )
    env = {"PYTHONPATH": ":".join(p for p in sys.path if p), "LAMBDA_TASK_ROOT": "/var/task"}
    out = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"
