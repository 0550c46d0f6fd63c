"""The local Lambda runtime's workers are forked from a template process per function: each
worker still runs the handler module's own code (its clients, its module state) once, as a
cold start does, with the function's environment; only the imports are shared."""

from __future__ import annotations

import asyncio
import os
import textwrap
from pathlib import Path

from devstack.runtime import EventLoopThread, FunctionPool, handler_imports
from devstack.template import FunctionSpec

HANDLER = textwrap.dedent(
    """
    from __future__ import annotations

    import os
    import sys
    from json import dumps, loads

    import email.mime.text

    STARTED = os.getpid()  # module-level code: once per worker
    COUNT = {"events": 0}

    def handler(event, context):
        COUNT["events"] += 1
        return {
            "pid": os.getpid(),
            "started": STARTED,
            "events": COUNT["events"],
            "env": os.environ.get("FUNCTION_SETTING"),
            "parent": os.getppid(),
            "email_loaded": "email.mime.text" in sys.modules,
        }
    """
)


def _spec(code_dir: Path) -> FunctionSpec:
    return FunctionSpec(
        name="RuntimeProbeFunction",
        code_dir=code_dir,
        handler="app.handler",
        timeout=10,
        environment={},
        layers=(),
        events={},
    )


def test_the_imports_of_a_handler_are_read_from_its_top_level(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(HANDLER)
    names = handler_imports(_spec(tmp_path))
    assert names[:2] == ["os", "sys"]
    assert "json" in names and "json.dumps" in names and "email.mime.text" in names
    assert "__future__" not in names


def test_each_worker_runs_the_handler_modules_code_itself_with_the_functions_environment(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text(HANDLER)
    loop = EventLoopThread("test-runtime")
    pool = FunctionPool(_spec(tmp_path), {"FUNCTION_SETTING": "from-template"}, 2, loop.loop)
    try:

        async def two_at_once() -> list[dict]:
            calls = await asyncio.gather(pool.run({}), pool.run({}))
            return [c.result for c in calls]

        first, second = asyncio.run_coroutine_threadsafe(two_at_once(), loop.loop).result(30)
        again = pool.invoke({})
    finally:
        pool.close()
        loop.stop()
    assert first["pid"] != second["pid"]  # two workers, two processes
    for result in (first, second):
        assert result["started"] == result["pid"]  # the module's code ran in the worker
        assert result["env"] == "from-template"
        assert result["parent"] != os.getpid()  # forked by the template, not by this process
        assert result["email_loaded"]
    assert again["pid"] in (first["pid"], second["pid"]) and again["events"] == 2  # warm
