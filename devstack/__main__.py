"""`python -m devstack run | token | invoke | lambda-image | engine | sam-env | sam-invoke`: what
`make run`, `make token`, `make invoke`, `make lambda-image` and `make sam-invoke` do."""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

# Only what every command needs: `invoke` runs once per event, and the stack's servers, their
# clients and the token library would double its start for nothing.
from devstack.template import ROOT, default_data_dir, load


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
    from devstack.stack import LocalStack, StackConfig

    stack = LocalStack(StackConfig())
    stack.start()
    print(
        f"Leaderboard API ready at {stack.url} (demo page: {stack.url}/). Ctrl-C stops it.",
        flush=True,
    )
    print(
        f"Operator console: {stack.url}/console/ (sign in with 'Get a local admin token')",
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
    from devstack import tokens

    if args.scope and not args.sub:
        print("--scope needs --sub (make token SUB=name SCOPE=...)", file=sys.stderr)
        return 2
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


def _stack_env() -> dict[str, str]:
    state_file = default_data_dir() / "stack.json"
    if not state_file.exists():
        raise SystemExit("the local stack is not running: start it with `make run` first")
    env: dict[str, str] = json.loads(state_file.read_text())["env"]
    return env


def lambda_image(args: argparse.Namespace) -> int:
    """Make Docker able to run the functions here, and build (or reuse) the local image."""
    from devstack import sam_local

    problem = sam_local.engine_problem(args.arch)
    if problem:
        print(f"Docker cannot run {args.arch} Lambda containers here: {problem}", file=sys.stderr)
        return 1
    print(sam_local.build_image(args.arch))
    return 0


def engine(args: argparse.Namespace) -> int:
    """Prepare Docker (and arm64 emulation) for the `sam local invoke` tests before the suite
    starts: installing OS packages adds system accounts, which must not happen while test
    workers are creating and using the PostgreSQL account. Never fails: the tests report."""
    from devstack import sam_local

    for arch in dict.fromkeys([sam_local.native_arch(), "arm64"]):
        problem = sam_local.engine_problem(arch)
        print(f"docker ({arch}): {problem or 'ready'}")
    return 0


def sam_env(args: argparse.Namespace) -> int:
    """The --env-vars file for `sam local invoke`, pointing at the running local stack."""
    from devstack import sam_local

    host = sam_local.docker_host_address() if args.docker else "127.0.0.1"
    path = sam_local.write_env_vars(_stack_env(), Path(args.out), host)
    print(path)
    return 0


def sam_invoke(args: argparse.Namespace) -> int:
    """`sam local invoke` in Docker: the functions built for `--arch` (arm64 as deployed, under
    emulation on other machines; x86_64, the local override), run in the images built here
    (runtime plus the function's layers), or with --pull in AWS's own image."""
    from devstack import sam_local

    function = _function_name(args.function)
    if problem := sam_local.engine_problem(args.arch):
        raise SystemExit(f"Docker cannot run {args.arch} Lambda containers here: {problem}")
    built = sam_local.build_functions(args.arch, ROOT / ".aws-sam" / f"local-{args.arch}")
    image, template = None, built
    if not args.pull:
        image = sam_local.function_images(built, args.arch)[function]
        template = sam_local.invocation_template(built, args.arch)
    stack_env = _stack_env()
    host = sam_local.docker_host_address()
    env_file = sam_local.write_env_vars(stack_env, default_data_dir() / "sam-env.json", host)
    cmd = sam_local.invoke_command(
        function, Path(args.event), template=template, env_file=env_file, image=image
    )
    with sam_local.LoopbackForwarder(host, sam_local.store_ports(stack_env)):
        return subprocess.run(cmd, env=sam_local.sam_environment(stack_env), check=False).returncode


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
    img = sub.add_parser("lambda-image", help="build the local python3.13 Lambda image")
    img.add_argument("--arch", default="arm64", choices=["arm64", "x86_64"])
    img.set_defaults(func=lambda_image)
    sub.add_parser("engine", help="install and start Docker for the sam local tests").set_defaults(
        func=engine
    )
    env = sub.add_parser("sam-env", help="write the --env-vars file for the running stack")
    env.add_argument("--out", default=str(default_data_dir() / "sam-env.json"))
    env.add_argument(
        "--docker", action="store_true", help="URLs as containers see the host (not 127.0.0.1)"
    )
    env.set_defaults(func=sam_env)
    sam = sub.add_parser("sam-invoke", help="sam local invoke in Docker against the local stack")
    sam.add_argument("function", help="logical id (ApiReadFunction) or folder (api_read)")
    sam.add_argument("event", help="path of an events/*.json file")
    sam.add_argument("--pull", action="store_true", help="use AWS's image (registry access)")
    sam.add_argument("--arch", default="arm64", choices=["arm64", "x86_64"])
    sam.set_defaults(func=sam_invoke)
    args = parser.parse_args(argv)
    os.chdir(ROOT)
    result: int = args.func(args)
    return result


if __name__ == "__main__":
    sys.exit(main())
