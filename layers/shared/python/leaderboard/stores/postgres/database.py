"""PostgreSQL, the system of record: the connection and the migrations (migrations/*.sql).

One connection per execution environment, opened lazily and replaced when the server closed it,
so a warm function does not pay a new TLS handshake per request.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib import resources
from typing import Any

import psycopg

from leaderboard.domain.errors import Unavailable

log = logging.getLogger(__name__)
_MIGRATION_LOCK = 72_201_001  # advisory lock id: one migrator at a time


class Database:
    """A lazily opened, self-healing connection (autocommit; writes use transaction())."""

    def __init__(self, url: str | Callable[[], str], *, connect_timeout: int = 5) -> None:
        self._provider = url if callable(url) else None
        self._url: str | None = None if callable(url) else url
        self.connect_timeout = connect_timeout
        self._conn: psycopg.Connection[Any] | None = None
        # One connection per execution environment; Lambda runs one request at a time, the
        # lock keeps threaded callers (the local stack, tests) from interleaving transactions.
        self._lock = threading.RLock()

    @property
    def url(self) -> str:
        """The connection URL; a provider (credentials from a secret) is asked once, and again
        after a failed connection (the secret may have been rotated)."""
        if self._url is None:
            assert self._provider is not None
            self._url = self._provider()
        return self._url

    def connection(self) -> psycopg.Connection[Any]:
        if self._conn is None or self._conn.closed or self._conn.broken:
            try:
                self._conn = psycopg.connect(
                    self.url, connect_timeout=self.connect_timeout, autocommit=True
                )
            except psycopg.OperationalError as exc:
                if self._provider is not None:
                    self._url = None  # re-read the credentials next time
                raise Unavailable("the database is unavailable", retry_after=2) from exc
        return self._conn

    @contextmanager
    def session(self) -> Iterator[psycopg.Connection[Any]]:
        """The connection in autocommit, for one statement that is its own transaction (no
        BEGIN and COMMIT round trips); a broken connection is dropped so the next call
        reconnects."""
        with self._lock:
            conn = self.connection()
            try:
                yield conn
            except psycopg.OperationalError as exc:
                self.close()
                raise Unavailable("the database is unavailable", retry_after=2) from exc

    @contextmanager
    def transaction(self) -> Iterator[psycopg.Connection[Any]]:
        """A transaction on the session's connection."""
        with self.session() as conn, conn.transaction():
            yield conn

    def ping(self) -> bool:
        with self.transaction() as conn:
            conn.execute("SELECT 1")
        return True

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


def migration_files() -> list[tuple[str, str]]:
    """(name, SQL) of every migration, in order; they ship inside the shared layer."""
    folder = resources.files(__package__ or "leaderboard.stores.postgres").joinpath("migrations")
    files = sorted(p.name for p in folder.iterdir() if p.name.endswith(".sql"))
    return [(name, folder.joinpath(name).read_text()) for name in files]


def apply_migrations(url: str, *, upto: str | None = None, connect_timeout: int = 10) -> list[str]:
    """Apply pending migrations in order, each in its own transaction; returns those applied.

    Safe to run concurrently (advisory lock) and repeatedly (recorded with a checksum; an edited
    migration that was already applied is an error, not silently skipped). `upto` stops after
    the named migration (to reproduce an older schema).
    """
    applied: list[str] = []
    with psycopg.connect(url, autocommit=True, connect_timeout=connect_timeout) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_MIGRATION_LOCK,))
        try:
            conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations ("
                " name text PRIMARY KEY, checksum text NOT NULL,"
                " applied_at timestamptz NOT NULL DEFAULT now())"
            )
            rows = conn.execute("SELECT name, checksum FROM schema_migrations").fetchall()
            done: dict[str, str] = dict(rows)
            for name, sql in migration_files():
                if upto is not None and name > upto:
                    break
                checksum = hashlib.sha256(sql.encode()).hexdigest()
                if name in done:
                    if done[name] != checksum:
                        raise RuntimeError(f"migration {name} changed after it was applied")
                    continue
                with conn.transaction():
                    conn.execute(sql.encode())  # trusted files shipped with the code
                    conn.execute(
                        "INSERT INTO schema_migrations (name, checksum) VALUES (%s, %s)",
                        (name, checksum),
                    )
                log.info("applied migration %s", name)
                applied.append(name)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_MIGRATION_LOCK,))
    return applied
