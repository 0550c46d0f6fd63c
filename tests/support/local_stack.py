"""The local stack started exactly as a newcomer starts it, `make run`, in its own process
group, and stopped as Ctrl-C stops it."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil

from devstack.servers import free_port, reserve_port

ROOT = Path(__file__).resolve().parents[2]


def stack_env(data_dir: Path, port: int) -> dict[str, str]:
    """This environment without the stores' addresses: the stack starts its own servers."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("REDIS_URL", "DATABASE_URL", "SQS_ENDPOINT_URL", "JWT_SECRET")
    }
    env.update(PORT=str(port), LOCAL_DATA_DIR=str(data_dir), LOCAL_CONCURRENCY="2")
    return env


class Stack:
    """`make run` in a process group of its own, ready when it says so."""

    def __init__(self, data_dir: Path, env: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.extra_env = dict(env or {})
        self.port = free_port()
        reserve_port(self.port)  # no server this process starts later may take it meanwhile
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = data_dir.parent / f"make-run-{self.port}.log"
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                ["make", "--no-print-directory", "run"],
                cwd=ROOT,
                env=stack_env(data_dir, self.port) | self.extra_env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if f"ready at {self.url}" in self.log.read_text(errors="replace"):
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        raise AssertionError(f"the stack did not start:\n{self.log.read_text()[-4000:]}")

    def tokens(self) -> dict[str, str]:
        out = subprocess.run(
            ["make", "-s", "token"],
            cwd=ROOT,
            check=True,
            env=stack_env(self.data_dir, self.port),
            capture_output=True,
            text=True,
        ).stdout
        return dict(re.findall(r"^(\w+_TOKEN)=(\S+)$", out, re.M))

    def request(self, method: str, path: str, body=None, token=None, headers=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        request.add_header("content-type", "application/json")
        for key, value in (headers or {}).items():
            request.add_header(key, value)
        if token:
            request.add_header("authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                raw = response.read()
                return response.status, {k.lower(): v for k, v in response.headers.items()}, raw
        except urllib.error.HTTPError as error:
            return error.code, {k.lower(): v for k, v in error.headers.items()}, error.read()

    def stop(self) -> float:
        """SIGTERM to the process group (as Ctrl-C reaches it); returns seconds to exit."""
        family = [self.process.pid]
        with contextlib.suppress(psutil.NoSuchProcess):
            family += [p.pid for p in psutil.Process(self.process.pid).children(recursive=True)]
        started = time.monotonic()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        deadline = started + 10
        while time.monotonic() < deadline and any(
            psutil.pid_exists(p) and psutil.Process(p).status() != "zombie" for p in family
        ):
            time.sleep(0.1)
        self.process.wait(1)
        left = [
            p
            for p in family
            if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        assert not left, f"processes left behind: {left}"
        return time.monotonic() - started


class RunningStack:
    """What a newcomer has once `make run` is up: the API's URL, the live endpoint and its API
    key (as `make run` prints them; `.local/stack.json`'s `live`), and tokens for any subject
    (as `make token SUB=... SCOPE=...` mints them). Shared by every test file of a worker that
    needs only a running stack: each test works on boards of its own."""

    def __init__(self, stack: Stack) -> None:
        from devstack import tokens

        self.stack = stack
        self.url = stack.url
        state = json.loads((stack.data_dir / "stack.json").read_text())
        self.live: dict[str, str] = state["live"]
        self._secret = tokens.local_secret(stack.data_dir)

    def token(self, subject: str, scope: str = "") -> str:
        from devstack import tokens

        return tokens.mint(self._secret, subject, scope)

    @property
    def admin_token(self) -> str:
        return self.token("admin", "leaderboard/admin")

    @property
    def server_token(self) -> str:
        return self.token("game-server", "leaderboard/server")

    def request(self, method: str, path: str, body=None, token=None, headers=None):
        return self.stack.request(method, path, body, token, headers)
