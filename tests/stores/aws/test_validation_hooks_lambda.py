"""Issue 23, the Lambda side of validation hooks: the real botocore client against a local
stand-in of the Lambda Invoke API (HTTP on 127.0.0.1: no AWS here), so the request, the
FunctionError header, the read timeout equal to the budget and a refused invoke are the
client's own behaviour. Also: nothing imports boto3 until a board names a Lambda hook."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote

import pytest

from leaderboard.domain.hooks import HookConfig
from leaderboard.domain.submissions import Submission
from leaderboard.stores.aws.validation_hooks import ValidationHooks

ROOT = Path(__file__).resolve().parents[2]
ACCOUNT = "arn:aws:lambda:us-east-1:123456789012:function:"


class _LambdaApi(BaseHTTPRequestHandler):
    """POST /2015-03-31/functions/{name}/invocations, answering by the function's name."""

    received: list[tuple[str, dict]] = []

    def do_POST(self) -> None:
        name = unquote(self.path.split("/")[3]).rsplit(":", 1)[-1]
        event = json.loads(self.rfile.read(int(self.headers["content-length"])))
        _LambdaApi.received.append((name, event))
        headers = {"content-type": "application/json"}
        status, body = 200, b""
        if name == "referee":
            verdicts = [
                {"verdict": "reject", "reason": "negative"}
                if s["score"] < 0
                else {"verdict": "flag"}
                for s in event["submissions"]
            ]
            body = json.dumps({"verdicts": verdicts}).encode()
        elif name == "crash":  # an unhandled exception in the function
            headers["x-amz-function-error"] = "Unhandled"
            body = json.dumps({"errorMessage": "boom", "errorType": "RuntimeError"}).encode()
        elif name == "slow":
            time.sleep(1)
            body = json.dumps({"verdicts": [{"verdict": "accept"}]}).encode()
        elif name == "garbage":
            body = b"not json"
        else:  # not deployed, or not allowed
            status = 404
            headers["x-amzn-errortype"] = "ResourceNotFoundException"
            body = json.dumps({"Type": "User", "Message": "Function not found"}).encode()
        try:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up at its read timeout, as it should

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def lambda_api() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _LambdaApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def hooks(lambda_api: str, monkeypatch: pytest.MonkeyPatch) -> ValidationHooks:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    return ValidationHooks(lambda_endpoint_url=lambda_api)


ITEMS = [(Submission("ada", 5, None, None), "k-1"), (Submission("bob", -1, "EU", None), None)]


def test_a_lambda_hook_gets_the_request_and_its_verdicts_count(hooks):
    _LambdaApi.received.clear()
    assert hooks.lambdas._clients == {}, "no client before a board needs one"
    got = hooks.judge(HookConfig(ACCOUNT + "referee", 2000), "arena", ITEMS)
    assert [(s.error, s.verdict, s.reason) for s in got] == [
        ("", "flag", None),
        ("rejected_by_hook", "", "negative"),
    ]
    assert _LambdaApi.received == [
        (
            "referee",
            {
                "board_id": "arena",
                "submissions": [
                    {
                        "player_id": "ada",
                        "score": 5,
                        "region": None,
                        "metadata": None,
                        "idempotency_key": "k-1",
                    },
                    {
                        "player_id": "bob",
                        "score": -1,
                        "region": "EU",
                        "metadata": None,
                        "idempotency_key": None,
                    },
                ],
            },
        )
    ]
    hooks.judge(HookConfig(ACCOUNT + "referee", 2000), "arena", ITEMS)
    assert list(hooks.lambdas._clients) == [2000], "one client per budget, made once"


@pytest.mark.parametrize("name", ["crash", "garbage", "missing"])
def test_a_function_error_a_non_json_result_or_a_refused_invoke_is_a_failure(hooks, name):
    closed = hooks.judge(HookConfig(ACCOUNT + name, 2000, "closed"), "arena", ITEMS)
    assert [s.error for s in closed] == ["hook_unavailable"] * 2
    opened = hooks.judge(HookConfig(ACCOUNT + name, 2000, "open"), "arena", ITEMS)
    assert [s.verdict for s in opened] == ["failed_open"] * 2


def test_the_read_timeout_is_the_budget(hooks):
    hooks.judge(HookConfig(ACCOUNT + "referee", 200), "arena", ITEMS)  # the client, made once
    _LambdaApi.received.clear()
    started = time.monotonic()
    got = hooks.judge(HookConfig(ACCOUNT + "slow", 200, "open"), "arena", ITEMS[:1])
    assert time.monotonic() - started < 0.5, "waited for the function instead of the budget"
    assert len(_LambdaApi.received) == 1, "no retry: it would spend the budget again"
    assert got[0].verdict == "failed_open" and "ReadTimeout" in (got[0].reason or "")


def test_nothing_on_the_hook_path_imports_boto3_until_a_lambda_hook_is_called():
    probe = (
        "import sys\n"
        "import leaderboard.domain.hooks, leaderboard.stores.aws.validation_hooks as v\n"
        "import leaderboard.services.scores\n"
        "assert 'boto3' not in sys.modules and 'botocore' not in sys.modules, 'imported'\n"
        "from leaderboard.domain.submissions import Submission\n"
        "from leaderboard.domain.hooks import HookConfig\n"
        "hooks = v.ValidationHooks({'ok': lambda r: {'verdicts': [{'verdict': 'accept'}]}})\n"
        "hooks.judge(HookConfig('ok'), 'b', [(Submission('a', 1, None, None), None)])\n"
        "assert 'boto3' not in sys.modules, 'a local hook needs no boto3'\n"
    )
    env = {"PYTHONPATH": f"{ROOT / 'layers/shared/python'}:{ROOT}", "PATH": "/usr/bin:/bin"}
    result = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
