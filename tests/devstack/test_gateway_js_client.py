"""The local gateway serves the built JS client under /client/ (the demo page imports it), one
module by name, never a path outside clients/js/dist."""

from __future__ import annotations

from pathlib import Path

import pytest

from devstack import gateway
from devstack.gateway import LocalApi
from devstack.template import load


@pytest.fixture
def api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalApi:
    (tmp_path / "leaderboard.js").write_text('export * from "./client.js";\n')
    (tmp_path / "client.js").write_text("export const x = 1;\n")
    (tmp_path / "leaderboard.d.ts").write_text("export {};\n")
    monkeypatch.setattr(gateway, "JS_CLIENT", tmp_path)
    return LocalApi(load(), lambda function, event: None, "secret")


def test_a_module_of_the_client_is_served_as_javascript(api: LocalApi) -> None:
    reply = api.handle("GET", "/client/leaderboard.js", {})
    assert reply.status == 200
    assert reply.headers["content-type"] == "text/javascript; charset=utf-8"
    assert reply.body == b'export * from "./client.js";\n'
    assert api.handle("GET", "/client/client.js", {}).status == 200


@pytest.mark.parametrize(
    "path",
    [
        "/client/missing.js",
        "/client/leaderboard.d.ts",
        "/client/../gateway.py",
        "/client/%2e%2e/gateway.py",
        "/client/sub/leaderboard.js",
        "/client/",
    ],
)
def test_anything_else_under_client_is_not_found(api: LocalApi, path: str) -> None:
    assert api.handle("GET", path, {}).status == 404
