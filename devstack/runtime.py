"""A local Lambda runtime: each function runs in its own worker processes, like execution
environments, with the environment template.yaml gives it and the layers on sys.path.

A worker serves one event at a time; the pool starts workers on demand up to a concurrency
limit, so module-level clients are created once per worker as they are once per environment.
"""

from __future__ import annotations

import contextlib
import importlib.util
import multiprocessing as mp
import os
import queue
import sys
import threading
import time
import traceback
import uuid
from dataclasses import dataclass
from multiprocessing.connection import Connection
from types import ModuleType
from typing import Any

from devstack.template import ROOT, FunctionSpec

SHARED_LAYER = ROOT / "layers" / "shared" / "python"


@dataclass
class LocalContext:
    """The attributes of the Lambda context object that handlers and Powertools read."""

    function_name: str
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = ""
    aws_request_id: str = ""
    deadline_ms: int = 0
    log_group_name: str = ""
    log_stream_name: str = "local"
    function_version: str = "$LATEST"

    def get_remaining_time_in_millis(self) -> int:
        return max(0, self.deadline_ms - int(time.time() * 1000))


def make_context(spec: FunctionSpec) -> LocalContext:
    request_id = str(uuid.uuid4())
    return LocalContext(
        function_name=spec.name,
        invoked_function_arn=f"arn:aws:lambda:us-east-1:000000000000:function:{spec.name}",
        aws_request_id=request_id,
        deadline_ms=int(time.time() * 1000) + spec.timeout * 1000,
        log_group_name=f"/aws/lambda/{spec.name}",
    )


def load_handler(spec: FunctionSpec) -> Any:
    """Import a function's handler module under a name of its own (several share 'app')."""
    module_file, _, attr = spec.handler.rpartition(".")
    path = spec.code_dir / f"{module_file.replace('.', '/')}.py"
    name = f"lambda_{spec.name}_{module_file.replace('.', '_')}"
    if name in sys.modules:
        return getattr(sys.modules[name], attr)
    module_spec = importlib.util.spec_from_file_location(name, path)
    assert module_spec is not None and module_spec.loader is not None
    module: ModuleType = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module
    try:
        module_spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return getattr(module, attr)


def _worker(conn: Connection, spec: FunctionSpec, env: dict[str, str]) -> None:
    os.environ.update(env)
    sys.path[:0] = [str(spec.code_dir), str(SHARED_LAYER)]
    try:
        handler = load_handler(spec)
    except BaseException:
        conn.send(("init_error", traceback.format_exc()))
        return
    conn.send(("ready", None))
    while True:
        try:
            message = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if message is None:
            return
        try:
            conn.send(("ok", handler(message, make_context(spec))))
        except Exception:
            conn.send(("error", traceback.format_exc()))


class InvocationError(RuntimeError):
    """The handler raised (Lambda would report a function error)."""


class FunctionTimeout(RuntimeError):
    pass


class _Worker:
    def __init__(self, spec: FunctionSpec, env: dict[str, str]) -> None:
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(
            target=_worker, args=(child, spec, env), daemon=True, name=f"lambda-{spec.name}"
        )
        self.process.start()
        child.close()
        status, detail = self._receive(60)
        if status != "ready":
            self.stop()
            raise InvocationError(f"{spec.name} failed to initialise:\n{detail}")

    def _receive(self, timeout: float) -> tuple[str, Any]:
        if not self.conn.poll(timeout):
            raise FunctionTimeout
        try:
            message: tuple[str, Any] = self.conn.recv()
        except EOFError:
            raise InvocationError("the function's process exited") from None
        return message

    def invoke(self, event: dict[str, Any], timeout: float) -> Any:
        self.conn.send(event)
        status, result = self._receive(timeout)
        if status != "ok":
            raise InvocationError(result)
        return result

    def stop(self) -> None:
        with contextlib.suppress(OSError, BrokenPipeError):
            self.conn.send(None)
        self.process.join(1)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(1)
        self.conn.close()


class FunctionPool:
    """Up to `concurrency` warm workers for one function."""

    def __init__(self, spec: FunctionSpec, env: dict[str, str], concurrency: int = 4) -> None:
        self.spec = spec
        self.env = env
        self.concurrency = concurrency
        self._idle: queue.SimpleQueue[_Worker] = queue.SimpleQueue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False

    def warm(self) -> None:
        worker = _Worker(self.spec, self.env)
        with self._lock:
            self._all.append(worker)
        self._idle.put(worker)

    def _acquire(self) -> _Worker:
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        with self._lock:
            can_start = len(self._all) < self.concurrency
            if can_start:
                placeholder = len(self._all)
                self._all.append(None)  # type: ignore[arg-type]  # reserve a slot
        if can_start:
            try:
                worker = _Worker(self.spec, self.env)
            except BaseException:
                with self._lock:
                    self._all.pop(placeholder)
                raise
            with self._lock:
                self._all[placeholder] = worker
            return worker
        return self._idle.get()

    def invoke(self, event: dict[str, Any]) -> Any:
        if self._closed:
            raise InvocationError("the local stack is shutting down")
        worker = self._acquire()
        try:
            result = worker.invoke(event, self.spec.timeout)
        except (FunctionTimeout, InvocationError) as exc:
            if isinstance(exc, FunctionTimeout) or not worker.process.is_alive():
                self._discard(worker)
                raise
            self._idle.put(worker)
            raise
        self._idle.put(worker)
        return result

    def _discard(self, worker: _Worker) -> None:
        worker.stop()
        with self._lock:
            if worker in self._all:
                self._all.remove(worker)

    def close(self) -> None:
        self._closed = True
        with self._lock:
            workers = [w for w in self._all if w is not None]
            self._all.clear()
        for worker in workers:
            worker.stop()
