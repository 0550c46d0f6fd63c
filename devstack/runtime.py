"""A local Lambda runtime: each function runs in its own worker processes, like execution
environments, with the environment template.yaml gives it and the layers on sys.path.

A worker serves one event at a time; the pool starts workers on demand up to a concurrency
limit, so module-level clients are created once per worker as they are once per environment.

Workers are forked from a template process per pool (`_Template`): a spawned interpreter with
the function's environment and path that has imported what the handler module imports, and
nothing else: no handler module, no client, no thread. A worker forked from it runs the
handler module's own code (its clients) as a cold start does, without importing boto3 or
psycopg again: most of a spawned worker's start-up was those imports, about a second of CPU
each time with boto3. Cold starts themselves are measured apart, in fresh interpreters
(benchmarks/cold_start.py).

The pool lives on an asyncio event loop (the gateway's, or a thread of its own): the gateway
awaits an invocation without a thread per request, and threads (the queue consumer, the
scheduler, tests) call `invoke()`, which hands the call to that loop. Events and results cross
a socket pair as length-prefixed pickles, and each result carries the handler's own duration,
as Lambda's REPORT line does.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib
import importlib.util
import multiprocessing as mp
import os
import pickle
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import uuid
from collections import deque
from collections.abc import Coroutine
from dataclasses import dataclass
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


def module_name(spec: FunctionSpec) -> str:
    """The name a function's handler module has in sys.modules (several share 'app')."""
    module_file = spec.handler.rpartition(".")[0]
    return f"lambda_{spec.name}_{module_file.replace('.', '_')}"


def load_handler(spec: FunctionSpec) -> Any:
    """Import a function's handler module under a name of its own, once per process."""
    module_file, _, attr = spec.handler.rpartition(".")
    path = spec.code_dir / f"{module_file.replace('.', '/')}.py"
    name = module_name(spec)
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


_HEADER = struct.Struct("!I")


def _send_frame(sock: socket.socket, payload: Any) -> None:
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    sock.sendall(_HEADER.pack(len(data)) + data)


def _read_frame(stream: Any) -> Any:
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        raise EOFError
    (size,) = _HEADER.unpack(header)
    data = stream.read(size)
    if len(data) < size:
        raise EOFError
    return pickle.loads(data)  # noqa: S301 - our own worker, over our own socket pair


def _worker(
    sock: socket.socket, spec: FunctionSpec, env: dict[str, str], in_template: bool = False
) -> None:
    """The worker process: import the handler once, then serve one event at a time."""
    if not in_template:  # forked from the template: its environment and path are set
        os.environ.update(env)
        sys.path[:0] = [str(spec.code_dir), str(SHARED_LAYER)]
    stream = sock.makefile("rb")
    try:
        handler = load_handler(spec)
    except BaseException:
        _send_frame(sock, ("init_error", traceback.format_exc(), 0.0))
        return
    _send_frame(sock, ("ready", None, 0.0))
    while True:
        try:
            event = _read_frame(stream)
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if event is None:
            return
        started = time.perf_counter()
        try:
            result = handler(event, make_context(spec))
            status = "ok"
        except Exception:
            result, status = traceback.format_exc(), "error"
        _send_frame(sock, (status, result, (time.perf_counter() - started) * 1000))


def handler_imports(spec: FunctionSpec) -> list[str]:
    """The modules a handler module imports at its top level (absolute imports only)."""
    module_file = spec.handler.rpartition(".")[0]
    path = spec.code_dir / f"{module_file.replace('.', '/')}.py"
    names: list[str] = []
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "__future__":
                continue
            names.append(node.module)
            names += [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def _template(control: socket.socket, spec: FunctionSpec, env: dict[str, str]) -> None:
    """The template process: import what the handler imports, then fork a worker for every
    socket the pool sends (answering the worker's pid), until the pool closes its end."""
    os.environ.update(env)
    sys.path[:0] = [str(spec.code_dir), str(SHARED_LAYER)]
    for name in handler_imports(spec):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: S112 - a name imported from a module, or a broken import
            continue  # that the worker then reports as its init error, as Lambda would
    # Workers are reaped as they exit, so their CPU counts as this process's children's (and,
    # once the pool reaps this process, as its own children's: tests/support/time_report.py).
    children: set[int] = set()
    signal.signal(signal.SIGCHLD, lambda *_: _reap_children(children))
    _send_frame(control, ("ready", None, 0.0))
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(control, 1, 1)
        except (OSError, KeyboardInterrupt):
            fds = []
        if not fds:  # the pool is gone: its workers have been told to stop
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _reap_children(children, wait=2.0)
            return
        pid = os.fork()
        if pid == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            worker = socket.socket(fileno=fds[0])
            code = 0
            try:
                _worker(worker, spec, env, in_template=True)
            except BaseException:
                code = 1
            finally:
                for stream in (sys.stdout, sys.stderr):  # os._exit flushes nothing
                    with contextlib.suppress(Exception):
                        stream.flush()
                os._exit(code)
        children.add(pid)
        os.close(fds[0])
        control.sendall(struct.pack("!i", pid))


def _reap_children(children: set[int], wait: float = 0.0) -> None:
    """Collect the workers that exited; with `wait`, all of them (killed after `wait` s)."""
    deadline = time.monotonic() + wait
    while children:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            children.clear()
            return
        if pid:
            children.discard(pid)
            continue
        if not wait:
            return
        if time.monotonic() >= deadline:
            for pid in children:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            wait = 0.0
            deadline = time.monotonic() + 1.0
        time.sleep(0.01)


class _Forked:
    """A worker forked by the template process: what the pool needs of a Process."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def is_alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)

    def join(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None else 3600)
        while self.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)


class _Template:
    """One pool's template process (see the module's docstring)."""

    def __init__(self, spec: FunctionSpec, env: dict[str, str]) -> None:
        ctx = mp.get_context("spawn")
        self.control, child = socket.socketpair()
        self.process = ctx.Process(
            target=_template, args=(child, spec, env), daemon=True, name=f"template-{spec.name}"
        )
        self.process.start()
        child.close()
        self.control.settimeout(120)
        self._lock = threading.Lock()
        status, detail, _ = _read_frame(self.control.makefile("rb"))
        if status != "ready":
            raise InvocationError(f"{spec.name}'s template failed:\n{detail}")

    def fork(self, worker_end: socket.socket) -> _Forked:
        with self._lock:
            socket.send_fds(self.control, [b"w"], [worker_end.fileno()])
            pid = struct.unpack("!i", _recv_exactly(self.control, 4))[0]
        return _Forked(pid)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.control.close()
        self.process.join(1)
        if self.process.is_alive():
            self.process.kill()


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise EOFError("the template process is gone")
        data += chunk
    return data


class InvocationError(RuntimeError):
    """The handler raised (Lambda would report a function error)."""


class FunctionTimeout(RuntimeError):
    pass


class WorkerLost(InvocationError):
    """The function's process died mid-invocation (killed, out of memory): an infrastructure
    fault, not the handler's error, so the gateway answers it as retryable."""


class NotDelivered(WorkerLost):
    """The worker was already gone when the event was handed to it: the function never saw
    the event, so the pool may give it to another worker (as Lambda would)."""


@dataclass(frozen=True)
class Invocation:
    result: Any
    duration_ms: float  # the handler's own time, measured in the worker


class _Worker:
    """One execution environment: a process and the parent's end of its socket pair."""

    def __init__(
        self, spec: FunctionSpec, env: dict[str, str], template: _Template | None = None
    ) -> None:
        self.sock, child = socket.socketpair()
        self.process: Any
        if template is not None:
            self.process = template.fork(child)
        else:
            ctx = mp.get_context("spawn")
            self.process = ctx.Process(
                target=_worker, args=(child, spec, env), daemon=True, name=f"lambda-{spec.name}"
            )
            self.process.start()
        child.close()
        self.sock.setblocking(False)
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    @classmethod
    async def start(
        cls, spec: FunctionSpec, env: dict[str, str], template: _Template | None = None
    ) -> _Worker:
        loop = asyncio.get_running_loop()
        worker = await loop.run_in_executor(None, cls, spec, env, template)
        try:
            worker.reader, worker.writer = await asyncio.open_unix_connection(sock=worker.sock)
            status, detail, _ = await worker._receive(60)
        except BaseException:
            worker.kill()
            raise
        if status != "ready":
            worker.kill()
            raise InvocationError(f"{spec.name} failed to initialise:\n{detail}")
        return worker

    async def _receive(self, timeout: float) -> tuple[str, Any, float]:
        assert self.reader is not None
        try:
            async with asyncio.timeout(timeout):
                header = await self.reader.readexactly(_HEADER.size)
                data = await self.reader.readexactly(_HEADER.unpack(header)[0])
        except TimeoutError:
            raise FunctionTimeout from None
        except (asyncio.IncompleteReadError, ConnectionError):
            raise WorkerLost("the function's process exited") from None
        message: tuple[str, Any, float] = pickle.loads(data)  # noqa: S301 - our own worker
        return message

    async def invoke(self, event: dict[str, Any], timeout: float) -> Invocation:
        assert self.writer is not None
        data = pickle.dumps(event, protocol=pickle.HIGHEST_PROTOCOL)
        try:
            self.writer.write(_HEADER.pack(len(data)) + data)
        except (RuntimeError, OSError):  # the process died while idle: its socket is closed
            raise NotDelivered("the function's process exited before the event") from None
        status, result, duration = await self._receive(timeout)
        if status != "ok":
            raise InvocationError(result)
        return Invocation(result, duration)

    def alive(self) -> bool:
        return self.process.is_alive()

    async def stop(self) -> None:
        """Ask the worker to exit, then kill it if it has not within a second."""
        if self.writer is not None and not self.writer.is_closing():
            data = pickle.dumps(None)
            with contextlib.suppress(OSError, RuntimeError):
                self.writer.write(_HEADER.pack(len(data)) + data)
        await asyncio.get_running_loop().run_in_executor(None, self._reap)
        if self.writer is not None:
            self.writer.close()
        else:
            self.sock.close()

    def kill(self) -> None:
        """End the worker at once (a timeout or a lost process), without blocking the loop."""
        with contextlib.suppress(OSError):
            self.process.kill()
        if self.writer is not None:
            self.writer.close()
        else:
            self.sock.close()
        threading.Thread(target=self._reap, daemon=True).start()

    def _reap(self) -> None:
        self.process.join(1)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(1)


class EventLoopThread:
    """An asyncio loop in a daemon thread, for pools that have no loop of their own to use."""

    def __init__(
        self, name: str = "function-pools", loop: asyncio.AbstractEventLoop | None = None
    ) -> None:
        self.loop = loop or asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()


class FunctionPool:
    """Up to `concurrency` warm workers for one function, each serving one event at a time.

    `run()` is a coroutine for the pool's loop; `invoke()` may be called from any other thread.
    Callers beyond the concurrency wait in arrival order for the next free worker.
    """

    def __init__(
        self,
        spec: FunctionSpec,
        env: dict[str, str],
        concurrency: int = 4,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        self.spec = spec
        self.env = env
        self.concurrency = concurrency
        self._own_loop = EventLoopThread(f"pool-{spec.name}") if loop is None else None
        self.loop = loop if loop is not None else self._own_loop.loop  # type: ignore[union-attr]
        self._slots = asyncio.Semaphore(concurrency)  # one per worker, running or not
        self._idle: deque[_Worker] = deque()
        self._workers: set[_Worker] = set()
        self._closed = False
        self._template: _Template | None = None
        self._template_lock = asyncio.Lock()

    def _call(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result()

    def warm(self) -> None:
        """Start one worker now (a cold start before the first request, not during it)."""
        self._call(self._warm())

    async def _warm(self) -> None:
        self._release(await self._acquire())

    async def _acquire(self) -> _Worker:
        await self._slots.acquire()
        while self._idle:
            worker = self._idle.pop()  # the most recently used: warm caches, as Lambda does
            if worker.alive():
                return worker
            self._workers.discard(worker)
            worker.kill()
        try:
            worker = await _Worker.start(self.spec, self.env, await self._forking())
        except BaseException:
            self._slots.release()
            raise
        self._workers.add(worker)
        return worker

    async def _forking(self) -> _Template | None:
        """The pool's template process, started with its first worker (None: spawn workers,
        where fork is not available)."""
        if not hasattr(os, "fork"):
            return None
        async with self._template_lock:
            if self._template is not None and not self._template.process.is_alive():
                self._template.close()
                self._template = None
            if self._template is None:
                loop = asyncio.get_running_loop()
                self._template = await loop.run_in_executor(None, _Template, self.spec, self.env)
            return self._template

    def _release(self, worker: _Worker) -> None:
        self._idle.append(worker)
        self._slots.release()

    def _discard(self, worker: _Worker) -> None:
        self._workers.discard(worker)
        worker.kill()
        self._slots.release()

    async def run(self, event: dict[str, Any]) -> Invocation:
        """Invoke the function once, on the pool's loop. A worker that died while idle never
        saw the event: it is replaced and the event goes to the next one."""
        if self._closed:
            raise InvocationError("the local stack is shutting down")
        for attempt in range(self.concurrency + 1):
            worker = await self._acquire()
            try:
                invocation = await worker.invoke(event, self.spec.timeout)
            except NotDelivered:
                self._discard(worker)
                if attempt == self.concurrency:
                    raise
                continue
            except WorkerLost:
                # Its connection is gone, whatever the process table says yet: the socket's
                # end can reach us before a killed process is reaped, and a worker put back
                # then would fail the next event too.
                self._discard(worker)
                raise
            except InvocationError:
                if worker.alive():
                    self._release(worker)
                else:
                    self._discard(worker)
                raise
            except BaseException:  # a timeout, or cancelled mid-call: the worker's state is unknown
                self._discard(worker)
                raise
            self._release(worker)
            return invocation
        raise AssertionError("unreachable")

    def invoke(self, event: dict[str, Any]) -> Any:
        """Invoke from a thread other than the pool's loop; returns the handler's result."""
        return self._call(self.run(event)).result

    def close(self) -> None:
        """Stop every worker (from a thread other than the loop's), then the pool's own loop."""
        self._closed = True
        if self.loop.is_running():
            self._call(self._stop_workers())
        if self._own_loop is not None:
            self._own_loop.stop()

    async def _stop_workers(self) -> None:
        workers = list(self._workers)
        self._workers.clear()
        self._idle.clear()
        await asyncio.gather(*(worker.stop() for worker in workers))
        if self._template is not None:
            await asyncio.get_running_loop().run_in_executor(None, self._template.close)
            self._template = None
