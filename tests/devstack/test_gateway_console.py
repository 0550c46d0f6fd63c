"""The local gateway serves the operator console (console/) under /console/: its files by name,
never a path; the built JS client under /console/client/ as under /client/; a config.json made
for this stack; and, locally only, `POST /local/admin-token` for the console's sign-in button."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devstack import gateway, tokens
from devstack.gateway import LocalApi
from devstack.template import ROOT, load

LIVE = {
    "realtime_url": "ws://127.0.0.1:3001/event/realtime",
    "http_host": "127.0.0.1:3002",
    "api_key": "da2-local",
    "namespace": "leaderboards",
    "publish_rate": "4",
}


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalApi:
    console, client = tmp_path / "console", tmp_path / "dist"
    console.mkdir()
    client.mkdir()
    (console / "index.html").write_text("<!doctype html><title>console</title>\n")
    (console / "console.js").write_text('import "./client/leaderboard.js";\n')
    (console / "console.css").write_text("body { margin: 0; }\n")
    (console / "notes.txt").write_text("not served\n")
    (client / "leaderboard.js").write_text('export * from "./client.js";\n')
    monkeypatch.setattr(gateway, "CONSOLE", console)
    monkeypatch.setattr(gateway, "JS_CLIENT", client)
    return LocalApi(load(), lambda function, event: None, "secret", live=LIVE)


def test_console_redirects_to_its_folder(api: LocalApi) -> None:
    reply = api.handle("GET", "/console", {})
    assert reply.status == 302
    assert reply.headers["location"] == "/console/"


@pytest.mark.parametrize(
    ("path", "content_type", "body"),
    [
        ("/console/", "text/html; charset=utf-8", b"<!doctype html><title>console</title>\n"),
        ("/console/index.html", "text/html; charset=utf-8", None),
        ("/console/?x=1", "text/html; charset=utf-8", None),
        ("/console/console.js", "text/javascript; charset=utf-8", None),
        ("/console/console.css", "text/css; charset=utf-8", b"body { margin: 0; }\n"),
        ("/console/client/leaderboard.js", "text/javascript; charset=utf-8", None),
    ],
)
def test_console_files_are_served_with_their_content_type(
    api: LocalApi, path: str, content_type: str, body: bytes | None
) -> None:
    reply = api.handle("GET", path, {})
    assert reply.status == 200, reply.body
    assert reply.headers["content-type"] == content_type
    if body is not None:
        assert reply.body == body


@pytest.mark.parametrize(
    "path",
    [
        "/console/missing.html",
        "/console/notes.txt",
        "/console/../gateway.py",
        "/console/%2e%2e/gateway.py",
        "/console/sub/index.html",
        "/console/client/../index.html",
        "/console/client/missing.js",
        "/console/client/",
        "/console/Index.html",
    ],
)
def test_anything_else_under_console_is_not_found(api: LocalApi, path: str) -> None:
    assert api.handle("GET", path, {}).status == 404


def test_config_names_this_stack_and_its_live_updates(api: LocalApi) -> None:
    reply = api.handle("GET", "/console/config.json", {"Host": "127.0.0.1:4567"})
    assert reply.status == 200
    assert reply.headers["content-type"] == "application/json"
    assert reply.headers["cache-control"] == "no-store"
    assert json.loads(reply.body) == {
        "api_url": "http://127.0.0.1:4567",
        "live": LIVE,
        "local_admin_token_url": "http://127.0.0.1:4567/local/admin-token",
    }


def test_config_without_a_usable_host_leaves_the_api_at_the_pages_origin(api: LocalApi) -> None:
    reply = api.handle("GET", "/console/config.json", {"Host": "evil host/<x>"})
    config = json.loads(reply.body)
    assert "api_url" not in config
    assert config["local_admin_token_url"] == "/local/admin-token"


def test_local_admin_token_is_an_admin_token_of_the_stack(
    api: LocalApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("JWT_ISSUER", raising=False)
    monkeypatch.delenv("JWT_AUDIENCE", raising=False)
    headers = {"Host": "127.0.0.1:3000", "Origin": "http://127.0.0.1:3000"}
    reply = api.handle("POST", "/local/admin-token", headers)
    assert reply.status == 200
    assert reply.headers["cache-control"] == "no-store"
    answer = json.loads(reply.body)
    claims = tokens.verify("secret", answer["token"])
    assert claims["scope"] == "leaderboard/admin"
    assert claims["sub"] == gateway.LOCAL_ADMIN_SUBJECT
    assert claims["exp"] - claims["iat"] == answer["expires_in"] == 8 * 3600
    # without an Origin (curl), too
    assert api.handle("POST", "/local/admin-token", {"Host": "127.0.0.1:3000"}).status == 200


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "127.0.0.1:3000", "Origin": "https://example.com"},
        {"Host": "127.0.0.1:3000", "Origin": "null"},
        {"Origin": "http://127.0.0.1:3000"},
    ],
)
def test_local_admin_token_is_refused_to_other_origins(
    api: LocalApi, headers: dict[str, str]
) -> None:
    reply = api.handle("POST", "/local/admin-token", headers)
    assert reply.status == 403
    assert b"token" not in reply.body


def test_local_admin_token_is_post_only(api: LocalApi) -> None:
    assert api.handle("GET", "/local/admin-token", {}).status == 404


def test_the_admin_token_route_is_not_in_the_template() -> None:
    """Local only: AWS never mints tokens (the deployment's issuer does)."""
    assert "admin-token" not in (ROOT / "template.yaml").read_text()
    assert not any(route.path.startswith("/local") for route in load().routes)


def test_the_page_comes_with_the_deployed_content_security_policy(api: LocalApi) -> None:
    """As its CloudFront distribution sends it on AWS: its own scripts and styles only (no
    inline ones), and connections to itself and the live endpoint."""
    policy = api.handle("GET", "/console/", {}).headers["content-security-policy"]
    assert "script-src 'self';" in policy and "style-src 'self';" in policy
    assert "connect-src 'self' http://127.0.0.1:3002 ws://127.0.0.1:3001;" in policy
    assert "frame-ancestors 'none'" in policy and "default-src 'none'" in policy
    assert "content-security-policy" not in api.handle("GET", "/console/console.js", {}).headers
