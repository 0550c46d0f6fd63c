"""Cold start: each function's import time against the import time of its own dependencies.

For every function of template.yaml, in fresh interpreters with the function's directory and
the shared layer first on sys.path (site-packages after, as usual) and a placeholder
environment (nothing is reached at import time):

1. one probe imports the function and records the third-party modules (those from
   site-packages) that the function's own code -- its handler module and the shared
   `leaderboard` package -- imports directly, and whether boto3 / psycopg were imported at all;
2. then, `repeats` times each, a fresh interpreter times `import app` (a), and another fresh
   interpreter times importing exactly those third-party modules, in the same order (b);
   the best of the runs counts.

The clock runs inside the child around the imports only, so interpreter start-up is excluded.
The ratio a / b is what the function's own code adds on top of the libraries it needs.

Two bytecode situations are measured:
- `cached`: bytecode for everything, as on a developer machine (kept under a private
  pycache_prefix written by the probe, so the repository is left alone), and as the layers
  ship when `make build` finds a python3.13 to compile them with;
- `source`: no bytecode at all, compiled at every start, as layers built without python3.13
  ship (Lambda's /opt is read-only, so nothing is cached between cold starts).

    PYTHONPATH=layers/shared/python:. .venv/bin/python -m benchmarks.cold_start
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.progress import progress
from devstack.template import ROOT, FunctionSpec
from devstack.template import load as load_template
from devstack.webhook_receiver import WEBHOOK_PLACEHOLDER_ENV

SHARED = ROOT / "layers" / "shared" / "python"
TARGET_RATIO = 1.25
PLACEHOLDER_ENV = {
    "REDIS_URL": "redis://127.0.0.1:1/0",
    "DATABASE_URL": "postgresql://u@127.0.0.1:1/db",
    "SCORE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/000000000000/scores",
    "LIVE_EVENTS_URL": "https://example.appsync-api.us-east-1.amazonaws.com/event",
    "JWT_ISSUER": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_EXAMPLE",
    "JWT_AUDIENCE": "exampleclientid",
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_TRACE_DISABLED": "true",
    **WEBHOOK_PLACEHOLDER_ENV,
}

# Runs first in every child: puts the function and the shared layer in front of site-packages.
_PATH = """
import sys
sys.path[:0] = [sys.argv[2], sys.argv[3]]
"""

# (a) the function's module, as the runtime imports the handler.
_TIME_APP = (
    _PATH
    + """
from time import perf_counter
t0 = perf_counter()
__import__("app")
t1 = perf_counter()
print(t1 - t0)
"""
)

# (b) exactly the third-party modules the function loaded, in the order it loaded them.
_TIME_DEPS = (
    _PATH
    + """
from time import perf_counter
names = sys.argv[4].split(",") if sys.argv[4] else []
retry = []
t0 = perf_counter()
for name in names:
    try:
        __import__(name)
    except ImportError:
        retry.append(name)  # a submodule its package imports mid-way (botocore.crt.auth)
failed = 0
for name in retry:
    try:
        __import__(name)
    except ImportError:
        failed += 1
t1 = perf_counter()
print(t1 - t0, failed)
"""
)

# The probe: the third-party modules the function loads (all of them, in order), and those its
# own code imports directly (for the report).
_PROBE = (
    _PATH
    + """
import builtins, json, site
before = set(sys.modules)
code, shared = sys.argv[2], sys.argv[3]
packages = tuple(p for p in site.getsitepackages() if p not in (code, shared))
direct = []
real_import = builtins.__import__

def third_party(name):
    module = sys.modules.get(name)
    origin = getattr(module, "__file__", None) or ""
    return bool(origin) and origin.startswith(packages)

def spy(name, globals=None, locals=None, fromlist=(), level=0):
    module = real_import(name, globals, locals, fromlist, level)
    caller = (globals or {}).get("__file__") or ""
    if level == 0 and caller.startswith((code, shared)):
        for candidate in [name, *(f"{name}.{item}" for item in fromlist or ())]:
            if candidate not in direct and third_party(candidate):
                direct.append(candidate)
    return module

builtins.__import__ = spy
__import__("app")
builtins.__import__ = real_import
loaded = [n for n in list(sys.modules) if n not in before and third_party(n)]
print(json.dumps({"direct": direct, "loaded": loaded}))
"""
)


def _child_env(spec: FunctionSpec) -> dict[str, str]:
    """The template's literal variables, placeholders for the rest, and what Lambda itself
    sets (the X-Ray SDK builds a botocore X-Ray client at import unless LAMBDA_TASK_ROOT is
    set, which it never pays in Lambda)."""
    env = {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp")}
    env.update(spec.resolved_environment({}))
    env.update(PLACEHOLDER_ENV)
    env.update(
        LAMBDA_TASK_ROOT=str(spec.code_dir),
        AWS_LAMBDA_FUNCTION_NAME=spec.name,
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE="512",
        AWS_EXECUTION_ENV="AWS_Lambda_python3.13",
        _HANDLER=spec.handler,
    )
    return env


def _child(spec: FunctionSpec, script: str, flags: list[str], *extra: str) -> str:
    """Run one fresh interpreter (-I: no PYTHON* variables, no user site, no cwd on the path)."""
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            *flags,
            "-c",
            script,
            spec.name,
            str(spec.code_dir),
            str(SHARED),
            *extra,
        ],
        env=_child_env(spec),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{spec.name}: the import failed:\n{result.stderr}")
    return result.stdout.strip().splitlines()[-1]


def _time_deps(spec: FunctionSpec, flags: list[str], deps: str) -> float:
    seconds, failed = _child(spec, _TIME_DEPS, flags, deps).split()
    assert failed == "0", f"{spec.name}: {failed} of its dependencies failed to import alone"
    return float(seconds)


def run(
    repeats: int = 11, source_repeats: int = 3, source_functions: set[str] | None = None
) -> list[dict[str, Any]]:
    """One dict per function: best-of-`repeats` times in ms, ratios, and what was imported.

    The best run, not the median: an import does a fixed amount of work and noise only adds to
    it. On this shared machine, medians of 5 moved a ratio by +-30% between runs. Imports from
    source take seconds each, so they are repeated fewer times (3: the suite took over three
    minutes of `make bench` at 5), and `source_functions` may name the
    only functions timed from source (the others' source fields are None)."""
    results = []
    with tempfile.TemporaryDirectory(prefix="cold-start-") as tmp:
        cached = ["-X", f"pycache_prefix={Path(tmp) / 'cached'}"]  # the probe fills it
        source = ["-B", "-X", f"pycache_prefix={Path(tmp) / 'none'}"]  # never any bytecode
        for name, spec in load_template().functions.items():
            progress(f"cold start: {name}")
            probe = json.loads(_child(spec, _PROBE, cached))
            deps = ",".join(probe["loaded"])
            times: dict[str, list[float]] = {"app": [], "deps": [], "app_src": [], "deps_src": []}
            from_source = source_functions is None or name in source_functions
            for attempt in range(max(repeats, source_repeats)):
                if attempt < repeats:
                    times["app"].append(float(_child(spec, _TIME_APP, cached)))
                    times["deps"].append(_time_deps(spec, cached, deps))
                if attempt < source_repeats and from_source:
                    times["app_src"].append(float(_child(spec, _TIME_APP, source)))
                    times["deps_src"].append(_time_deps(spec, source, deps))
            ms = {key: min(values) * 1000 if values else None for key, values in times.items()}
            packages = sorted({n.split(".")[0] for n in probe["loaded"]})
            results.append(
                {
                    "function": name,
                    "import_ms": _round(ms["app"]),
                    "dependencies_ms": _round(ms["deps"]),
                    "ratio": _ratio(ms["app"], ms["deps"]),
                    "import_src_ms": _round(ms["app_src"]),
                    "dependencies_src_ms": _round(ms["deps_src"]),
                    "ratio_src": _ratio(ms["app_src"], ms["deps_src"]),
                    "boto3": "boto3" in packages,
                    # the SDK machinery; Powertools' user agent imports only botocore/__init__
                    "botocore_client": "botocore.client" in probe["loaded"],
                    "psycopg": "psycopg" in packages,
                    # PyJWT and cryptography's binding come with the first token (redis-py
                    # imports the cryptography package alone, to learn it is there)
                    "jwt": "jwt" in packages or "cryptography.hazmat" in probe["loaded"],
                    "direct_imports": probe["direct"],
                    "packages": packages,
                    "modules": len(probe["loaded"]),
                }
            )
    return results


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _ratio(app: float | None, deps: float | None) -> float | None:
    return None if app is None or deps is None else round(app / deps, 2)


def print_table(results: list[dict[str, Any]]) -> None:
    print(
        f"{'function':<20} {'import ms':>9} {'deps ms':>8} {'ratio':>6} {'src import':>10}"
        f" {'src deps':>9} {'src ratio':>9} {'boto3':>6} {'botocore.client':>15} {'psycopg':>7}"
    )
    yes = {True: "yes", False: "no"}
    for r in results:
        print(
            f"{r['function']:<20} {r['import_ms']:>9} {r['dependencies_ms']:>8} {r['ratio']:>6}"
            f" {r['import_src_ms']:>10} {r['dependencies_src_ms']:>9} {r['ratio_src']:>9}"
            f" {yes[r['boto3']]:>6} {yes[r['botocore_client']]:>15} {yes[r['psycopg']]:>7}"
        )
    print("deps: the third-party modules each function loads, timed alone; its code imports:")
    for r in results:
        print(f"  {r['function']} ({r['modules']} modules): {', '.join(r['direct_imports'])}")
    for r in results:
        ok = r["ratio"] <= TARGET_RATIO
        print(
            f"target: {r['function']} import <= {TARGET_RATIO} x its dependencies:"
            f" {r['ratio']} {'OK' if ok else 'MISSED'}"
        )
    read = next((r for r in results if r["function"] == "ApiReadFunction"), None)
    if read is not None:
        lean = not read["boto3"] and not read["psycopg"] and not read["jwt"]
        verdict = "OK" if lean else "MISSED"
        print(f"target: ApiReadFunction imports neither boto3, psycopg nor PyJWT: {verdict}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=11)
    parser.add_argument("--source-repeats", type=int, default=3)
    args = parser.parse_args()
    print_table(run(args.repeats, args.source_repeats))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
