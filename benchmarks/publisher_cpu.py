"""The live publisher's Redis CPU, told apart from the writer's on the same Valkey.

`SLOWLOG` with `slowlog-log-slower-than 0` logs every command with its execution time (µs, the
time `INFO commandstats` sums) and the name and address of the connection that sent it. The
publisher's commands are those of a connection named `live-publisher` (CLIENT SETNAME), or, for a
publisher whose connections have no name, the commands only the publisher sends:

* EVALSHA of a live script: every `.lua` beside `leaderboard.stores.redis.live` and the sharded
  reader's second round (`live.sharded`), their SHAs computed from the modules as the code does;
* any command on a key under `lb:live:` (the lease and the successor);
* `HVALS lb:boards` (the catalog);
* SSUBSCRIBE / SUNSUBSCRIBE (the write path's wakes).

The commands a script calls are logged too, each before the script's own entry, under the
caller's name and address, and the script's time already includes theirs: only top-level
commands are summed. A script's commands are the entries right before it, from the same
connection, in the hash slot of its first key, whose times fit in the script's and, when the
script's source is known (the live scripts by SHA, an EVAL's from its logged text), that it
calls by name; the walk back stops at anything else (another connection, another slot, a
command no script may call, a script). What it cannot tell apart: a top-level command of the
same connection that such a script also calls, on its keys, sent just before it with no other
command in between and fast enough to fit; neither of today's publisher's scripts has one.

Connections of the benchmark itself are named `bench-...` and never counted. The log is read by
entry id, so an entry is counted once; ids are consecutive, so a gap means Valkey dropped
entries (the log outgrew `slowlog-max-len`), and reading fails rather than under-count.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from typing import Any
from urllib.parse import urlencode, urlsplit, urlunsplit

PUBLISHER_NAME = "live-publisher"
BENCH_PREFIX = "bench-"
LIVE_KEY_PREFIX = b"lb:live:"
CATALOG = b"lb:boards"
SCRIPT_CALLS = frozenset({b"EVAL", b"EVALSHA", b"EVAL_RO", b"EVALSHA_RO", b"FCALL", b"FCALL_RO"})
WAKES = frozenset({b"SSUBSCRIBE", b"SUNSUBSCRIBE"})
# Commands no script may call (flagged noscript): a walk back from a script stops there.
NOT_IN_SCRIPTS = SCRIPT_CALLS | {
    b"SUBSCRIBE",
    b"SSUBSCRIBE",
    b"PSUBSCRIBE",
    b"UNSUBSCRIBE",
    b"SUNSUBSCRIBE",
    b"PUNSUBSCRIBE",
    b"CLIENT",
    b"HELLO",
    b"AUTH",
    b"MULTI",
    b"EXEC",
    b"WATCH",
    b"UNWATCH",
    b"SCRIPT",
    b"SLOWLOG",
    b"CONFIG",
}
# Room for every command of a cell at 1,000 writes/s: the submit script's own commands are
# logged too (about 9 entries a write), so a cell's warm-up, window and drain log about 90,000.
MAX_LEN = 1_000_000


def named(url: str, name: str) -> str:
    """`url` with a connection name (redis-py sends CLIENT SETNAME on every connection)."""
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode({"client_name": name})) if q)
    return urlunsplit(parts._replace(query=query))


_CALLED = re.compile(r"""(?:redis|server)\.p?call\(\s*(['"])([A-Za-z_]+)\1""")
_CALLS = re.compile(r"(?:redis|server)\.p?call\(")
_CUT = re.compile(rb"\.\.\. \(\d+ more bytes\)$")


def script_commands(source: str) -> frozenset[bytes] | None:
    """The commands a script calls by name; None when one is named at run time."""
    named = [m.group(2).upper().encode() for m in _CALLED.finditer(source)]
    return frozenset(named) if len(named) == len(_CALLS.findall(source)) else None


def live_scripts() -> dict[bytes, frozenset[bytes] | None]:
    """The scripts the publisher's EVALSHAs name, by SHA (computed from its modules' scripts as
    the code computes them), with the commands each calls."""
    from leaderboard.stores.redis.live import index, sharded
    from leaderboard.stores.redis.scripts import load_script, script_sha

    package = index.__package__ or "leaderboard.stores.redis.live"
    sources = [
        load_script(package, entry.name.removesuffix(".lua"))
        for entry in resources.files(package).iterdir()
        if entry.name.endswith(".lua")
    ]
    # the sharded reader's second round (shard_read.lua, shared with the reads of sharded
    # boards, which no row makes)
    sources += [
        v
        for k, v in vars(sharded).items()
        if k.startswith("_") and k.isupper() and isinstance(v, str) and "redis.call" in v
    ]
    return {script_sha(text).encode(): script_commands(text) for text in sources}


@dataclass(frozen=True, slots=True)
class Entry:
    id: int
    duration: int  # µs
    args: tuple[bytes, ...]
    peer: bytes
    name: str

    @property
    def command(self) -> bytes:
        return self.args[0].upper() if self.args else b""

    @property
    def key(self) -> bytes | None:
        """The first key, for the commands the publisher and the scripts send (key first)."""
        if self.command in SCRIPT_CALLS:
            numkeys = self.args[2] if len(self.args) > 2 else b"0"
            return (
                self.args[3] if numkeys.isdigit() and int(numkeys) and len(self.args) > 3 else None
            )
        return self.args[1] if len(self.args) > 1 else None


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _entry(raw: Any) -> Entry:
    ident, _started, duration, args, peer, name = raw[:6]
    return Entry(int(ident), int(duration), tuple(args), peer, _text(name))


def nested(
    entries: list[Entry], known: Mapping[bytes, frozenset[bytes] | None] | None = None
) -> set[int]:
    """The ids of the entries that are commands called by a script (module docstring); `known`:
    the commands of scripts by SHA."""
    from redis.crc import key_slot

    inside: set[int] = set()
    for k, script in enumerate(entries):
        if script.command not in SCRIPT_CALLS:
            continue
        key = script.key
        slot = key_slot(key) if key is not None else None
        calls = _calls(script, known or {})
        budget = script.duration
        j = k - 1
        while j >= 0:
            entry, after = entries[j], entries[j + 1]
            if entry.id != after.id - 1 or entry.peer != script.peer:
                break
            if entry.command in NOT_IN_SCRIPTS or entry.duration > budget:
                break
            if calls is not None and entry.command not in calls:
                break
            if slot is not None and entry.key is not None and key_slot(entry.key) != slot:
                break
            inside.add(entry.id)
            budget -= entry.duration
            j -= 1
    return inside


def _calls(
    script: Entry, known: Mapping[bytes, frozenset[bytes] | None]
) -> frozenset[bytes] | None:
    """The commands `script` may call, when its source is known."""
    if len(script.args) < 2:
        return None
    if script.command in (b"EVALSHA", b"EVALSHA_RO"):
        return known.get(script.args[1].lower())
    if script.command in (b"EVAL", b"EVAL_RO") and not _CUT.search(script.args[1]):
        return script_commands(script.args[1].decode(errors="replace"))
    return None


class Rules:
    """Which top-level entries are the publisher's (module docstring)."""

    def __init__(self) -> None:
        self.scripts = live_scripts()

    def publisher(self, entry: Entry) -> bool:
        if entry.name == PUBLISHER_NAME:
            return True
        if entry.name.startswith(BENCH_PREFIX):
            return False
        command = entry.command
        if command == b"EVALSHA":
            return len(entry.args) > 1 and entry.args[1].lower() in self.scripts
        if command in WAKES:
            return True
        if command == b"HVALS":
            return entry.key == CATALOG
        if command in SCRIPT_CALLS:  # EVAL of the lease's scripts: their first key
            key = entry.key
            return key is not None and key.startswith(LIVE_KEY_PREFIX)
        return any(arg.startswith(LIVE_KEY_PREFIX) for arg in entry.args[1:4])


@dataclass
class Usage:
    """What the log holds between two marks."""

    entries: int = 0  # every entry, top-level or not, of any connection
    publisher_commands: int = 0  # the publisher's top-level commands
    publisher_us: int = 0
    publisher_scripts: int = 0  # of those, script calls
    writer_commands: int = 0  # top-level commands of the connection named `writer`
    writer_us: int = 0
    script_us: list[int] = field(default_factory=list)  # each of the publisher's script calls


class SlowlogMeter:
    """Every command logged while it is open (CONFIG restored and the log emptied after).

    `mark()` returns the newest entry id; `usage(a, b)` reads the log up to now and sums the
    entries with ids in (a, b]. The log is read by id, never by position, and a read that finds
    an id missing raises (see the module docstring)."""

    def __init__(self, redis_url: str, writer: str = "bench-writer") -> None:
        import redis

        self.client = redis.Redis.from_url(named(redis_url, "bench-slowlog"))
        self.writer = writer
        self.rules = Rules()
        self.saved: dict[str, str] = {}
        self.read: dict[int, Entry] = {}
        self.newest = -1

    def __enter__(self) -> SlowlogMeter:
        saved: dict[Any, Any] = self.client.config_get("slowlog-*")
        self.saved = {_text(k): _text(v) for k, v in saved.items()}
        self.client.config_set("slowlog-max-len", MAX_LEN)
        self.client.execute_command("SLOWLOG", "RESET")
        self.client.config_set("slowlog-log-slower-than", 0)
        self.newest = self.mark()
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            self.client.config_set(
                "slowlog-log-slower-than", self.saved.get("slowlog-log-slower-than", "10000")
            )
            self.client.execute_command("SLOWLOG", "RESET")
            self.client.config_set("slowlog-max-len", self.saved.get("slowlog-max-len", "128"))
        self.client.close()

    def mark(self) -> int:
        newest = self.client.execute_command("SLOWLOG", "GET", 1)
        return int(newest[0][0]) if newest else -1

    def poll(self) -> None:
        """Read what was logged since the last read; raises if Valkey dropped any of it."""
        newest = self.mark()
        wanted = newest - self.newest
        if wanted <= 0:
            return
        if wanted > MAX_LEN:
            raise RuntimeError(
                f"SLOWLOG dropped entries: {wanted} logged since the last read, slowlog-max-len"
                f" is {MAX_LEN} (read more often or raise publisher_cpu.MAX_LEN)"
            )
        count = wanted + 1000  # more is logged while this reads
        while True:
            got = [_entry(raw) for raw in self.client.execute_command("SLOWLOG", "GET", count)]
            fresh = sorted((e for e in got if e.id > self.newest), key=lambda e: e.id)
            if fresh and fresh[0].id == self.newest + 1:
                break
            if len(got) < count or count >= MAX_LEN:  # the log no longer holds them
                first = fresh[0].id if fresh else None
                raise RuntimeError(
                    f"SLOWLOG dropped entries: after id {self.newest} the log holds {first} first"
                )
            count = min(MAX_LEN, count * 2)
        if [e.id for e in fresh] != list(range(self.newest + 1, self.newest + 1 + len(fresh))):
            raise RuntimeError("SLOWLOG entries out of sequence")
        for entry in fresh:
            self.read[entry.id] = entry
        self.newest = fresh[-1].id

    def usage(self, after: int, until: int) -> Usage:
        self.poll()
        entries = [self.read[i] for i in sorted(self.read)]
        inside = nested(entries, self.rules.scripts)
        used = Usage()
        for entry in entries:
            if not after < entry.id <= until:
                continue
            used.entries += 1
            if entry.id in inside:
                continue
            if entry.name == self.writer:
                used.writer_commands += 1
                used.writer_us += entry.duration
            elif self.rules.publisher(entry):
                used.publisher_commands += 1
                used.publisher_us += entry.duration
                if entry.command in SCRIPT_CALLS:
                    used.publisher_scripts += 1
                    used.script_us.append(entry.duration)
        return used
