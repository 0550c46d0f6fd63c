"""`python -m devstack run | token | invoke`: what `make run`, `make token` and `make invoke` do."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from devstack import tokens
from devstack.stack import LocalStack, StackConfig, default_data_dir
from devstack.template import ROOT, load


def stop_on_signals() -> list[int]:
    """SIGINT and SIGTERM are recorded in the returned list, and nothing more: a handler that
    takes a lock (threading.Event.set did) deadlocks when a second signal (a second Ctrl-C, or
    one to the process group and one from a parent) arrives while the first holds it."""
    received: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda signum, _frame: received.append(signum))
    return received


def run(_: argparse.Namespace) -> int:
    logging.basicConfig(
        level=os.environ.get("LOCAL_LOG_LEVEL", "INFO"),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    received = stop_on_signals()
    stack = LocalStack(StackConfig())
    stack.start()
    print(
        f"Leaderboard API ready at {stack.url} (demo page: {stack.url}/). Ctrl-C stops it.",
        flush=True,
    )
    live = stack.live_config()
    if live:
        print(
            f"Live updates: {live['realtime_url']} (host {live['http_host']}, "
            f"API key {live['api_key']}; docs/API.md#live-updates)",
            flush=True,
        )
    while not received:
        time.sleep(0.2)
    print("stopping...", flush=True)
    stack.stop()
    print("stopped.", flush=True)
    return 0


def token(args: argparse.Namespace) -> int:
    secret = tokens.local_secret(default_data_dir())
    if args.sub:
        print(tokens.mint(secret, args.sub, args.scope or ""))
        return 0
    print('# Local bearer tokens (24 h). Use: curl -H "Authorization: Bearer $ADMIN_TOKEN" ...')
    print(f"PLAYER_TOKEN={tokens.mint(secret, 'player-1')}")
    print(f"SERVER_TOKEN={tokens.mint(secret, 'game-server', 'leaderboard/server')}")
    print(f"ADMIN_TOKEN={tokens.mint(secret, 'admin', 'leaderboard/admin')}")
    return 0


def _function_name(name: str) -> str:
    functions = load().functions
    if name in functions:
        return name
    for logical, spec in functions.items():
        if spec.code_dir.name == name or spec.code_dir.name == name.replace("-", "_"):
            return logical
    raise SystemExit(f"unknown function {name!r}; one of: {', '.join(functions)}")


def invoke(args: argparse.Namespace) -> int:
    """The local `sam local invoke`: one event through the handler, template environment."""
    from devstack.runtime import SHARED_LAYER, load_handler, make_context

    state_file = default_data_dir() / "stack.json"
    if not state_file.exists():
        raise SystemExit("the local stack is not running: start it with `make run` first")
    state = json.loads(state_file.read_text())
    spec = load().functions[_function_name(args.function)]
    os.environ.update(spec.resolved_environment(state["env"]))
    sys.path[:0] = [str(spec.code_dir), str(SHARED_LAYER)]
    event: Any = json.loads(Path(args.event).read_text())
    # As with `sam local invoke`: the function's logs on stderr, its result alone on stdout.
    with contextlib.redirect_stdout(sys.stderr):
        result = load_handler(spec)(event, make_context(spec))
    print(json.dumps(result, indent=2))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="devstack", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("run", help="start the whole system locally").set_defaults(func=run)
    tok = sub.add_parser("token", help="print bearer tokens for the local stack")
    tok.add_argument("--sub", help="mint one token for this subject")
    tok.add_argument("--scope", help="space-separated scopes for --sub")
    tok.set_defaults(func=token)
    inv = sub.add_parser("invoke", help="run one function with an event file")
    inv.add_argument("function", help="logical id (ApiReadFunction) or folder (api_read)")
    inv.add_argument("event", help="path of an events/*.json file")
    inv.set_defaults(func=invoke)
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
