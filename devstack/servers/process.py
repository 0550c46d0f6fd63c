"""Process plumbing shared by every embedded server: ports, spawning, stopping.

Lifetime rules, because leaked database processes are the usual failure of such helpers:

* every server is a direct child of this process, started in its own process group so a
  terminal Ctrl-C reaches only us and we decide how the server shuts down;
* on Linux each child gets a parent-death signal, so it dies even if we are SIGKILLed;
  note the kernel ties this to the *thread* that started it, so start servers from a
  long-lived thread (normally the main thread);
* ``stop()`` asks politely, escalates to SIGKILL after a timeout, and also kills any
  processes the server forked; an ``atexit`` hook stops whatever is still running.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Self

LOOPBACK = "127.0.0.1"
_IS_LINUX = sys.platform.startswith("linux")
_ADDRESS_IN_USE = "Address already in use"
_START_ATTEMPTS = 3  # retries when an auto-picked port was grabbed by someone else


class ServerStartError(RuntimeError):
    """A server process failed to come up; the message carries the tail of its log."""


# Ports this process will bind later (the API's, named by PORT): never handed out before that.
_reserved: set[int] = set()


def reserve_port(port: int) -> None:
    """Keep `port` out of free_port's answers: the local stack binds its API port last, after
    its stores and event API took free ports, which could otherwise be that very port."""
    _reserved.add(port)


def free_port(host: str = LOOPBACK) -> int:
    """Return a TCP port that is currently free on ``host`` (and not reserved).

    The port is only reserved until this returns; servers using it retry with a new one
    if it was taken in the meantime.
    """
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port: int = sock.getsockname()[1]
        if port not in _reserved:
            return port


_live_lock = threading.Lock()
_live: dict[int, Callable[[], None]] = {}


def _register(obj: object, stop: Callable[[], None]) -> None:
    with _live_lock:
        _live[id(obj)] = stop


def _unregister(obj: object) -> None:
    with _live_lock:
        _live.pop(id(obj), None)


@atexit.register
def _stop_all() -> None:
    """Stop servers the caller forgot, so an interpreter exit never leaks processes."""
    with _live_lock:
        stops = list(_live.values())
    for stop in stops:
        with contextlib.suppress(Exception):
            stop()


def _deathsig_preexec(sig: signal.Signals) -> Callable[[], None] | None:
    """Build a ``preexec_fn`` that makes the child receive ``sig`` when we die (Linux)."""
    if not _IS_LINUX:
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()
    pr_set_pdeathsig = 1

    def _preexec() -> None:
        # Runs in the forked child after the uid switch (which would clear the setting).
        prctl(pr_set_pdeathsig, int(sig), 0, 0, 0)
        if os.getppid() != parent:  # parent already gone before prctl took effect
            os.kill(os.getpid(), sig)

    return _preexec


def _spawn(
    argv: list[str],
    *,
    cwd: Path,
    log: Path,
    deathsig: signal.Signals,
    env: dict[str, str] | None = None,
    user: pwd.struct_passwd | None = None,
) -> subprocess.Popen[bytes]:
    """Start a server in its own process group with output appended to ``log``."""
    with log.open("ab") as log_file:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            process_group=0,
            preexec_fn=_deathsig_preexec(deathsig),
            close_fds=True,
            user=user.pw_uid if user is not None else None,
            group=user.pw_gid if user is not None else None,
            extra_groups=[] if user is not None else None,  # drop root's groups
        )


def _has_exited(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the child exited, *without* reaping it.

    Keeping the exited child as a zombie keeps its pid (= our process-group id) reserved,
    so a following ``killpg`` can never hit an unrelated process that reused the number.
    """
    if proc.returncode is not None:
        return True
    if hasattr(os, "waitid"):
        try:
            info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return True
        return info is not None
    return proc.poll() is not None


def _proc_stat(pid: int) -> tuple[int, str] | None:
    """(ppid, start time) of a live process from /proc; None if it is gone or a zombie."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):  # dead, waiting for its (new) parent to reap it
        return None
    return int(fields[1]), fields[19]


def _descendants(pid: int) -> list[tuple[int, str]]:
    """All live descendants of ``pid`` as (pid, start time); Linux only, else empty.

    PostgreSQL children call setsid(), so a process-group kill does not reach them.
    """
    if not _IS_LINUX:
        return []
    children: dict[int, list[tuple[int, str]]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        info = _proc_stat(int(entry.name))
        if info is not None:
            children.setdefault(info[0], []).append((int(entry.name), info[1]))
    found: list[tuple[int, str]] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child[0])
    return found


def _kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child, its process group and every process it forked, then reap it."""
    if proc.returncode is not None:
        return
    descendants = _descendants(proc.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    for pid, started in descendants:
        info = _proc_stat(pid)
        if info is not None and info[1] == started:  # still the same process
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired as exc:  # pragma: no cover - kernel trouble
        raise RuntimeError(f"process {proc.pid} survived SIGKILL") from exc
    _wait_gone(descendants, timeout=5)


def _wait_gone(processes: list[tuple[int, str]], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for pid, started in processes:
        while time.monotonic() < deadline:
            info = _proc_stat(pid)
            if info is None or info[1] != started:
                break
            time.sleep(0.01)


def _terminate(proc: subprocess.Popen[bytes], sig: signal.Signals, timeout: float) -> None:
    """Send ``sig`` to the server, wait up to ``timeout``, then kill whatever is left."""
    if proc.returncode is not None:
        return
    if not _has_exited(proc):
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, sig)
        deadline = time.monotonic() + timeout
        while not _has_exited(proc) and time.monotonic() < deadline:
            time.sleep(0.01)
    _kill_tree(proc)


def _read_from(path: Path, offset: int, limit: int = 4000) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", "replace")


def _short_tmp_base() -> Path:
    """A temp base short enough for Unix socket paths (macOS' $TMPDIR is very long)."""
    tmp = Path("/tmp")  # noqa: S108 - only used for short-lived mkdtemp() dirs
    if tmp.is_dir() and os.access(tmp, os.W_OK | os.X_OK):
        return tmp
    return Path(tempfile.gettempdir())


class _ServerProcess:
    """Shared bookkeeping for a server that runs as one child process."""

    _kind = "server"

    def __init__(self) -> None:
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._log_offset = 0

    @property
    def pid(self) -> int:
        """PID of the most recently started server process (it may have exited since)."""
        if self._proc is None:
            raise RuntimeError(f"{self._kind} was never started")
        return self._proc.pid

    def is_running(self) -> bool:
        """Whether the server process is alive (says nothing about readiness)."""
        return self._proc is not None and not _has_exited(self._proc)

    def kill(self) -> None:
        """SIGKILL the server (and its children) without cleanup, to simulate a crash."""
        if self._proc is not None:
            _kill_tree(self._proc)

    def _log_tail(self) -> str:
        if self._log_path is None:
            return ""
        return _read_from(self._log_path, self._log_offset)

    def _launch(
        self,
        argv: list[str],
        *,
        cwd: Path,
        log: Path,
        deathsig: signal.Signals,
        env: dict[str, str] | None = None,
        user: pwd.struct_passwd | None = None,
    ) -> None:
        self._log_path = log
        self._log_offset = log.stat().st_size if log.exists() else 0
        self._proc = _spawn(argv, cwd=cwd, log=log, deathsig=deathsig, env=env, user=user)

    _port = 0
    _port_fixed = False

    def _wait_ready(self, timeout: float) -> bool:  # pragma: no cover - overridden
        raise NotImplementedError

    def _launch_until_ready(self, launch: Callable[[int], None], timeout: float) -> None:
        """Call `launch(attempt)` until the server is ready. If an auto-picked port was taken
        meanwhile, try again on another; once up, the port is kept for restart()."""
        for attempt in range(_START_ATTEMPTS):
            launch(attempt)
            if self._wait_ready(timeout):
                self._port_fixed = True
                return
            log = self._log_tail()
            self._shutdown(timeout=1)
            in_use = _ADDRESS_IN_USE.lower() in log.lower()  # uvloop words it in lower case
            if in_use and not self._port_fixed and attempt + 1 < _START_ATTEMPTS:
                self._port = free_port()
                continue
            raise ServerStartError(f"{self._kind} did not start on port {self._port}:\n{log}")

    def _startup_failed(self) -> bool:
        """True if the process died during startup (it is then reaped)."""
        if self._proc is None or not _has_exited(self._proc):
            return False
        _kill_tree(self._proc)
        return True

    # Set by each server kind: how long a graceful stop may take, and a start after restart.
    _stop_timeout = 5.0
    _start_timeout = 10.0
    _given_dir: Path | None = None
    _data_dir: Path | None = None
    persist = False

    def _shutdown(self, timeout: float) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def stop(self, timeout: float | None = None) -> None:
        """Graceful stop (SIGKILL after ``timeout``); remove our temp dir unless persisting."""
        try:
            self._shutdown(self._stop_timeout if timeout is None else timeout)
        finally:
            _unregister(self)
            if self._given_dir is None and not self.persist and self._data_dir is not None:
                shutil.rmtree(self._data_dir, ignore_errors=True)
                self._data_dir = None

    def restart(self, timeout: float | None = None) -> None:
        """Stop and start again on the same port and data dir."""
        self._shutdown(self._stop_timeout)
        self.start(self._start_timeout if timeout is None else timeout)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self, timeout: float = 10) -> None:  # pragma: no cover - overridden
        raise NotImplementedError


class _PythonServer(_ServerProcess):
    """A server of ours (``python -m devstack.<module>``) in a child process: its log in a
    temporary folder removed on stop, ready once it logs "listening on" and its ports accept
    connections. Subclasses give the command line and the ports."""

    _log_prefix = "server-"
    _log_name = "server.log"

    def __init__(self) -> None:
        super().__init__()
        self._log_dir: Path | None = None

    def _argv(self, attempt: int) -> list[str]:
        raise NotImplementedError

    def _url(self, scheme: str, port: int, path: str = "") -> str:
        """A URL of the running server (an error before it is started)."""
        if not self.is_running():
            raise RuntimeError(f"{type(self).__name__} is not started")
        return f"{scheme}://{LOOPBACK}:{port}{path}"

    def _ports(self) -> tuple[int, ...]:
        raise NotImplementedError

    def start(self, timeout: float = 30) -> None:
        """Start the server and wait until it accepts connections."""
        if self.is_running():
            return
        if self._log_dir is None or not self._log_dir.exists():  # stop() removed the last one
            self._log_dir = Path(tempfile.mkdtemp(prefix=self._log_prefix))
            self._data_dir = self._log_dir  # removed on stop()
        _register(self, self.stop)
        try:
            self._start(timeout)
        except BaseException:
            self.stop()
            raise

    def _secret_env(self) -> dict[str, str]:
        """Secrets the child gets in its environment rather than on its command line."""
        return {}

    def _start(self, timeout: float) -> None:
        assert self._log_dir is not None
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        env.update(self._secret_env())
        log = self._log_dir / self._log_name

        def launch(attempt: int) -> None:
            argv = [sys.executable, "-m", *self._argv(attempt)]
            self._launch(argv, cwd=Path.cwd(), log=log, deathsig=signal.SIGKILL, env=env)

        self._launch_until_ready(launch, timeout)

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._startup_failed():
                return False
            if "listening on" in self._log_tail():
                with contextlib.suppress(OSError):
                    for port in self._ports():
                        socket.create_connection((LOOPBACK, port), timeout=0.5).close()
                    return True
            time.sleep(0.02)
        return False

    def _shutdown(self, timeout: float) -> None:
        if self._proc is not None:
            _terminate(self._proc, signal.SIGTERM, timeout)
