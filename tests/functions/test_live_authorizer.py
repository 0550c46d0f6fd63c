"""Only a player, or a server, may subscribe to that player's channel (docs/API.md, "Player
channels"). The Event API's Lambda authorizer (functions/live_authorizer) verifies the token as
the read function does and answers whom it names; the players namespace's onSubscribe handler
(template.yaml) compares every channel with that answer.

The handler runs here as in AWS (RS256, the issuer's keys served over HTTP on the loopback),
and with the local stack's HS256 tokens against the table of hostile ones. The onSubscribe
code runs under node when node is installed, against the same cases as the authorizer's own
channel check."""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from devstack import tokens
from devstack.runtime import make_context
from devstack.template import ROOT, load
from leaderboard.api.bearer import RETRY_SECONDS, TokenVerifier
from leaderboard.api.channel_auth import MAX_TTL_SECONDS, decide, may_subscribe
from leaderboard.domain.live import PLAYER_NAMESPACE, player_channel, player_segment
from leaderboard.settings import TokenSettings
from tests.support import hostile_tokens as hostile
from tests.support.jwks import AUDIENCE, ISSUER, Answer, JwksServer, public_jwk, rs256, rsa_key

TEMPLATE = load()
SPEC = TEMPLATE.functions["PlayerChannelAuthorizerFunction"]
SERVER, ADMIN = "leaderboard/server", "leaderboard/admin"
ADA, BOB = player_channel("ada"), player_channel("bob")
REFUSED = {"isAuthorized": False, "ttlOverride": 0}


def request(
    authorization: Any, channel: Any = ADA, operation: Any = "EVENT_SUBSCRIBE", **changes: Any
) -> dict[str, Any]:
    """An authorization request as AppSync sends one for a subscribe."""
    context = {
        "apiId": "exampleapiid",
        "accountId": "123456789012",
        "requestId": "5b5c2a3e-0000-4000-8000-000000000000",
        "operation": operation,
        "channelNamespaceName": PLAYER_NAMESPACE,
        "channel": channel,
        **changes,
    }
    return {
        "authorizationToken": authorization,
        "requestContext": {k: v for k, v in context.items() if v is not ...},
        "requestHeaders": {"host": "example.appsync-api.eu-west-1.amazonaws.com"},
    }


def load_authorizer(monkeypatch: pytest.MonkeyPatch, **env: str) -> ModuleType:
    """The function's module, imported afresh with `env` (its cold start), under a name of its
    own: the local stack's copy of the handler may be loaded in this process with other
    settings."""
    for name in ("JWT_SECRET", "JWT_JWKS_URL"):
        monkeypatch.delenv(name, raising=False)
    template_values = SPEC.resolved_environment({})  # Powertools' service and namespace
    for name, value in {**template_values, "POWERTOOLS_TRACE_DISABLED": "true", **env}.items():
        monkeypatch.setenv(name, value)
    spec = importlib.util.spec_from_file_location(
        f"test_live_authorizer_app_{time.monotonic_ns()}", SPEC.code_dir / "app.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def issuer() -> Iterator[JwksServer]:
    server = JwksServer()
    yield server
    server.close()


@pytest.fixture(scope="module")
def key() -> Any:
    return rsa_key()


class Authorizer:
    """The function's handler, called as AppSync calls it."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module

    def __call__(self, event: Any) -> dict[str, Any]:
        answer: dict[str, Any] = self.module.lambda_handler(event, make_context(SPEC))
        return answer


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, issuer: JwksServer, key: Any) -> Authorizer:
    """The handler as the template configures it in AWS: RS256 with the issuer's JWK set."""
    issuer.answer = Answer(keys=[public_jwk(key, "k1")])
    module = load_authorizer(
        monkeypatch, JWT_ISSUER=ISSUER, JWT_AUDIENCE=AUDIENCE, JWT_JWKS_URL=issuer.url
    )
    assert module.verifier.settings.algorithm == "RS256"
    return Authorizer(module)


def bearer(token: str) -> str:
    return f"Bearer {token}"


# --- a player: its own channel, and nothing else ---------------------------------------------


def test_a_player_may_subscribe_to_its_own_channel(aws: Any, key: Any) -> None:
    answer = aws(request(bearer(rs256(key, "k1", sub="ada")), ADA))
    assert answer["isAuthorized"] is True
    # The Event API hands handlerContext to the handlers; it takes string values only.
    assert answer["handlerContext"] == {"segment": player_segment("ada"), "server": "false"}
    assert 0 < answer["ttlOverride"] <= MAX_TTL_SECONDS


def test_a_yes_is_kept_no_longer_than_the_token_lives(aws: Any, key: Any) -> None:
    soon = int(time.time()) + 40
    answer = aws(request(bearer(rs256(key, "k1", sub="ada", exp=soon)), ADA))
    assert answer["isAuthorized"] is True and answer["ttlOverride"] <= 40


@pytest.mark.parametrize(
    "channel",
    [
        BOB,  # another player's
        "/players/*",  # every player's
        f"{ADA}/*",  # below its own, through a wildcard
        f"{ADA}/more",  # below its own
        f"/players/{player_segment('ada').upper()}",  # not its segment, letter for letter
        "/players/ada",  # the player id, not its segment
    ],
    ids=["other-player", "wildcard", "own-wildcard", "own-sub-channel", "case", "raw-id"],
)
def test_a_player_may_subscribe_to_no_other_channel(aws: Any, key: Any, channel: str) -> None:
    assert aws(request(bearer(rs256(key, "k1", sub="ada")), channel)) == REFUSED


def test_a_player_whose_id_is_a_wildcard_gets_no_wildcard(aws: Any, key: Any) -> None:
    """A subject of `*` has a segment like any other, never `*` itself."""
    token = bearer(rs256(key, "k1", sub="*"))
    assert aws(request(token, "/players/*")) == REFUSED
    assert aws(request(token, player_channel("*")))["isAuthorized"] is True


# --- a server (or an admin): any player's channel, and all of them --------------------------


@pytest.mark.parametrize("scope", [SERVER, ADMIN, f"openid {SERVER}"])
@pytest.mark.parametrize("channel", [ADA, BOB, "/players/*", f"{BOB}/*"])
def test_a_server_may_subscribe_to_any_player_channel(
    aws: Any, key: Any, scope: str, channel: str
) -> None:
    answer = aws(request(bearer(rs256(key, "k1", sub="game-server", scope=scope)), channel))
    assert answer["isAuthorized"] is True
    assert answer["handlerContext"] == {
        "segment": player_segment("game-server"),
        "server": "true",
    }


def test_a_scope_that_is_not_a_servers_is_a_players(aws: Any, key: Any) -> None:
    for scope in ("leaderboard/servers", "leaderboard", "openid profile", "LEADERBOARD/SERVER"):
        token = bearer(rs256(key, "k1", sub="ada", scope=scope))
        assert aws(request(token, BOB)) == REFUSED, scope
        assert aws(request(token, ADA))["handlerContext"]["server"] == "false", scope


# --- tokens that are not valid ----------------------------------------------------------------


def test_invalid_tokens_are_refused(aws: Any, key: Any) -> None:
    now = int(time.time())
    cases = {
        "expired": rs256(key, "k1", sub="ada", exp=now - 5),
        "forged (another key)": rs256(rsa_key(), "k1", sub="ada"),
        "unknown kid": rs256(key, "k2", sub="ada"),
        "no kid": rs256(key, None, sub="ada"),
        "alg none": hostile.jws({"alg": "none", "kid": "k1"}, hostile.claims(), "", None),
        "HS256 (the local stack's)": tokens.mint(LOCAL_SECRET, "ada", SERVER),
        "wrong issuer": rs256(key, "k1", sub="ada", iss="https://evil.example"),
        "wrong audience": rs256(key, "k1", sub="ada", aud="someone-else"),
        "no sub": rs256(key, "k1", sub=...),
        "not yet valid": rs256(key, "k1", sub="ada", nbf=now + 120),
        "server scope, expired": rs256(key, "k1", sub="s", scope=SERVER, exp=now - 5),
    }
    for case, token in cases.items():
        for channel in (ADA, "/players/*"):
            assert aws(request(bearer(token), channel)) == REFUSED, case


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer ", "bearer {t}", "{t}", "Basic cDE6cHc=", "Bearer {t},Bearer {t}"],
    ids=["none", "empty", "scheme", "scheme-space", "lowercase", "bare", "basic", "repeated"],
)
def test_an_authorization_that_is_no_bearer_token_is_refused(
    aws: Any, key: Any, authorization: str | None
) -> None:
    """No token (the API key alone), or anything but exactly `Bearer <JWT>`."""
    value = None if authorization is None else authorization.format(t=rs256(key, "k1", sub="ada"))
    assert aws(request(value, ADA)) == REFUSED
    absent = request(None, ADA)
    del absent["authorizationToken"]
    assert aws(absent) == REFUSED
    for other in (["Bearer x.y.z"], {"Authorization": "Bearer x.y.z"}, 7, True):
        assert aws(request(other, ADA)) == REFUSED


def test_an_unreachable_issuer_refuses_and_the_refusal_is_not_kept(
    aws: Authorizer, issuer: JwksServer, key: Any
) -> None:
    """Refused while the keys cannot be fetched (ttlOverride 0: AppSync asks again next time),
    and allowed once they can, with no new deployment."""
    now = [1000.0]
    aws.module.verifier = TokenVerifier(aws.module.verifier.settings, monotonic=lambda: now[0])
    issuer.answer = Answer(status=503)
    token = bearer(rs256(key, "k1", sub="ada"))
    assert aws(request(token, ADA)) == REFUSED
    issuer.answer = Answer(keys=[public_jwk(key, "k1")])
    now[0] += RETRY_SECONDS
    assert aws(request(token, ADA))["isAuthorized"] is True
    assert issuer.requests == 2


# --- requests that are not a subscribe to a player channel -----------------------------------


MALFORMED = {
    "not-an-object": [],
    "no-request-context": {"authorizationToken": "Bearer a.b.c"},
    "request-context-a-string": {"authorizationToken": "Bearer a.b.c", "requestContext": "x"},
}


@pytest.mark.parametrize("event", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_request_is_refused(aws: Any, event: Any) -> None:
    assert aws(event) == REFUSED


@pytest.mark.parametrize(
    "changes",
    [
        {"operation": "EVENT_PUBLISH"},  # publishing is IAM's
        {"operation": "EVENT_CONNECT", "channel": None, "channelNamespaceName": None},
        {"operation": ...},
        {"operation": "event_subscribe"},
        {"channelNamespaceName": "leaderboards", "channel": "/leaderboards/arena/weekly"},
        {"channelNamespaceName": ...},
        {"channel": ...},
        {"channel": None},
        {"channel": 7},
        {"channel": "/leaderboards/x"},
        {"channel": "players/x"},
        {"channel": "/players"},
        {"channel": "/players/"},
        {"channel": "//players/x"},
        {"channel": f"/players//{player_segment('ada')}"},
        {"channel": f"{ADA}/"},
        {"channel": "/players/" + "P" * 2000},
    ],
    ids=lambda changes: json.dumps(changes, default=str)[:60],
)
def test_a_request_that_is_not_a_subscribe_to_a_player_channel_is_refused(
    aws: Any, key: Any, changes: dict[str, Any]
) -> None:
    """Even for a server's token: the authorizer answers for player channels only."""
    token = bearer(rs256(key, "k1", sub="game-server", scope=SERVER))
    event = request(token, ADA)
    event["requestContext"].update(changes)
    event["requestContext"] = {k: v for k, v in event["requestContext"].items() if v is not ...}
    assert aws(event) == REFUSED


def test_the_issuers_keys_are_fetched_once_for_every_token(
    aws: Any, issuer: JwksServer, key: Any
) -> None:
    for sub in ("ada", "ada", "bob"):
        token = bearer(rs256(key, "k1", sub=sub))
        assert aws(request(token, player_channel(sub)))["isAuthorized"] is True
    assert issuer.requests == 1


# --- in the local stack's mode: HS256 with its secret, the table of hostile tokens -----------

LOCAL_SECRET = "local-secret-for-the-authorizer-tests"


@pytest.fixture(scope="module")
def local() -> TokenVerifier:
    return TokenVerifier(
        TokenSettings(
            issuer=tokens.issuer(),
            audiences=frozenset({tokens.audience()}),
            secret=LOCAL_SECRET,
        )
    )


def test_local_tokens_get_the_same_answers(local: TokenVerifier) -> None:
    player = bearer(tokens.mint(LOCAL_SECRET, "player-1"))
    server = bearer(tokens.mint(LOCAL_SECRET, "game-server", SERVER))
    own = player_channel("player-1")
    assert decide(request(player, own), local).authorized
    assert not decide(request(player, ADA), local).authorized
    assert decide(request(server, "/players/*"), local).authorized


@pytest.mark.parametrize("case", hostile.BAD_TOKENS)
def test_every_hostile_token_is_refused(local: TokenVerifier, case: str) -> None:
    """Tokens made for player p-1: refused on p-1's own channel too."""
    token = hostile.bad_tokens(LOCAL_SECRET)[case]
    decision = decide(request(bearer(token), player_channel("p-1")), local)
    assert not decision.authorized and decision.response() == REFUSED, decision


# --- the sample event: `make invoke FN=live_authorizer EVENT=events/live_authorizer_subscribe.json`


def test_the_sample_event_is_a_subscribe_whose_token_is_refused(local: TokenVerifier) -> None:
    """A request as AppSync sends it; its token was signed by no one the stack knows, so the
    answer is a refusal, for the token's sake (not the request's shape)."""
    event = json.loads((ROOT / "events/live_authorizer_subscribe.json").read_text())
    decision = decide(event, local)
    assert decision.response() == REFUSED
    assert decision.reason.startswith("invalid token"), decision.reason
    assert event["requestContext"]["channel"] == player_channel("player-1")


# --- the namespace's onSubscribe handler, run under node --------------------------------------

# A stand-in for the APPSYNC_JS runtime's util: unauthorized() ends the handler with an error.
_RUNNER = """
import { onSubscribe } from './handler.mjs';
const cases = JSON.parse(process.argv[2]);
const results = cases.map(([segments, context]) => {
  const ctx = { identity: context === null ? null : { handlerContext: context },
                info: { channel: { path: '/' + segments.join('/'), segments },
                        channelNamespace: { name: segments[0] }, operation: 'SUBSCRIBE' } };
  try { onSubscribe(ctx); return true; } catch (e) {
    if (e.message !== 'Unauthorized') throw e;
    return false;
  }
});
console.log(JSON.stringify(results));
"""
_UTIL = "const util = { unauthorized() { throw new Error('Unauthorized'); } };"
_IMPORT = "import { util } from '@aws-appsync/utils';"


def _subscribe_cases() -> list[tuple[list[str], dict[str, str] | None]]:
    ada, bob = player_segment("ada"), player_segment("bob")
    channels = [[ada], [bob], ["*"], [ada, "*"], [ada, "x"], [ada.upper()]]
    contexts: list[dict[str, str] | None] = [
        {"segment": ada, "server": "false"},
        {"segment": ada, "server": "true"},
        {"segment": "*", "server": "false"},
        {"segment": "", "server": "false"},
        {"server": "false"},
        {"segment": ada},
        {"segment": ada, "server": "TRUE"},
        {},
        None,
    ]
    return [([PLAYER_NAMESPACE, *below], c) for below in channels for c in contexts]


def _expected(segments: list[str], context: dict[str, str] | None) -> bool:
    """The authorizer's own rule (may_subscribe), on what the handler is handed."""
    context = context or {}
    server = context.get("server") == "true"
    return may_subscribe(segments[1:], context.get("segment", ""), server)


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_onsubscribe_handler_admits_what_the_authorizer_admits(tmp_path: Path) -> None:
    code = TEMPLATE.raw["Resources"]["PlayerChannelNamespace"]["Properties"]["CodeHandlers"]
    assert code.count(_IMPORT) == 1
    (tmp_path / "handler.mjs").write_text(code.replace(_IMPORT, _UTIL))
    (tmp_path / "run.mjs").write_text(_RUNNER)
    cases = _subscribe_cases()
    node = shutil.which("node")
    assert node is not None
    done = subprocess.run(
        [node, str(tmp_path / "run.mjs"), json.dumps(cases)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    results = json.loads(done.stdout)
    expected = [_expected(segments, context) for segments, context in cases]
    wrong = [case for case, got, want in zip(cases, results, expected, strict=True) if got != want]
    assert not wrong, wrong
    assert True in expected and False in expected


def test_the_function_builds_its_handler_module_only() -> None:
    assert SPEC.handler == "app.lambda_handler" and SPEC.code_dir.name == "live_authorizer"
    assert (SPEC.code_dir / "Makefile").read_text().count(f"build-{SPEC.name}:") == 1
