"""How the live suite tells the publisher's Redis time apart in SLOWLOG (benchmarks/
publisher_cpu.py), on entries as Valkey logs them: a script's own commands come right before it
under the caller's name, and must not be counted twice."""

from __future__ import annotations

from benchmarks.live_latency import per_channel_second
from benchmarks.publisher_cpu import Entry, Rules, live_scripts, nested, script_commands
from leaderboard.stores.redis.scripts import load_script, script_sha

EXTEND = b"\nif redis.call('GET', KEYS[1]) == ARGV[1] then\n  return redis.call('PEXPIRE', KEYS[1], ARGV[2])\nend\nreturn 0\n"  # noqa: E501
PUBLISHER = b"127.0.0.1:1000"
WRITER = b"127.0.0.1:2000"


def entry(ident: int, us: int, *args: bytes, peer: bytes = PUBLISHER, name: str = "") -> Entry:
    return Entry(ident, us, args, peer, name)


def live_sha() -> bytes:
    """live.lua's SHA, computed as LiveIndex computes it."""
    return script_sha(load_script("leaderboard.stores.redis.live", "live")).encode()


def test_a_tick_of_today_s_publisher_counts_each_top_level_command_once() -> None:
    board = b"lb:{b1}:cfg"
    log = [
        entry(1, 6, b"GET", b"lb:live:successor"),
        entry(2, 2, b"SET", b"lb:live:lease", b"run-1", b"NX"),  # top-level, before the EVAL
        entry(3, 1, b"GET", b"lb:live:lease"),  # the EVAL's own commands
        entry(4, 3, b"PEXPIRE", b"lb:live:lease", b"5000"),
        entry(5, 33, b"EVAL", EXTEND, b"1", b"lb:live:lease", b"run-1", b"5000"),
        entry(6, 6, b"HVALS", b"lb:boards"),
        entry(7, 1, b"GET", board),  # live.lua's own
        entry(8, 2, b"XRANGE", b"lb:{b1}:outbox", b"-", b"+"),
        entry(9, 50, b"EVALSHA", live_sha(), b"10", board),
        # the writer's submit script and its commands, and the benchmark's own connections
        entry(10, 2, b"ZADD", b"lb:{b1}:z:all-time", b"1", b"p1", peer=WRITER, name="bench-writer"),
        entry(11, 40, b"EVALSHA", b"c95e", b"9", board, peer=WRITER, name="bench-writer"),
        entry(12, 1, b"GET", b"lb:live:lease", peer=b"127.0.0.1:3000", name="bench-lease-watch"),
    ]
    inside = nested(log, live_scripts())
    assert inside == {3, 4, 7, 8, 10}
    rules = Rules()
    counted = [e.id for e in log if e.id not in inside and rules.publisher(e)]
    assert counted == [1, 2, 5, 6, 9]


def test_a_named_publisher_counts_everything_it_sends_but_its_scripts_own_commands() -> None:
    name = "live-publisher"
    log = [
        entry(1, 4, b"SSUBSCRIBE", b"lb:{b1}:wake", peer=b"127.0.0.1:4000", name=name),
        entry(2, 1, b"HGET", b"lb:{b1}:live", b"cursor", name=name),
        entry(3, 30, b"EVALSHA", live_sha(), b"10", b"lb:{b1}:cfg", name=name),
        entry(4, 3, b"HGET", b"lb:boards", b"b1", name=name),
        entry(5, 2, b"SUNSUBSCRIBE", b"lb:{b1}:wake", peer=b"127.0.0.1:4000", name=name),
    ]
    inside = nested(log, live_scripts())
    assert inside == {2}
    assert [e.id for e in log if e.id not in inside and Rules().publisher(e)] == [1, 3, 4, 5]


def test_a_walk_back_stops_at_another_slot_another_connection_and_a_time_that_does_not_fit():
    log = [
        entry(1, 5, b"GET", b"lb:{b2}:cfg"),  # another board's slot
        entry(2, 1, b"GET", b"lb:{b1}:cfg"),
        entry(3, 9, b"EVALSHA", live_sha(), b"10", b"lb:{b1}:cfg"),
        entry(4, 1, b"GET", b"lb:{b1}:cfg", peer=WRITER),  # another connection
        entry(5, 1, b"GET", b"lb:{b1}:cfg"),
        entry(6, 20, b"HGET", b"lb:{b1}:live", b"cursor"),  # longer than the script
        entry(7, 10, b"EVALSHA", live_sha(), b"10", b"lb:{b1}:cfg"),
    ]
    assert nested(log, live_scripts()) == {2}


def test_the_commands_a_script_calls_come_from_its_source() -> None:
    assert script_commands(EXTEND.decode()) == {b"GET", b"PEXPIRE"}
    assert script_commands("local c = ARGV[1]\nreturn redis.call(c, KEYS[1])") is None
    assert live_scripts()[live_sha()] is not None


def test_messages_per_channel_per_second_is_the_busiest_window_of_any_channel() -> None:
    assert per_channel_second({}) == 0
    ticks = [0.0, 0.25, 0.5, 0.75, 1.0, 1.25]  # 4 in any [t, t + 1)
    assert per_channel_second({"a": ticks, "b": [5.0]}) == 4
    assert per_channel_second({"a": [0.0, 0.999, 0.9995]}) == 3
