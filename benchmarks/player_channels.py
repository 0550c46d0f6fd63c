"""Player channels: the boards the live suite's player rows run on, and what the publisher's
script costs per call with and without watches (the `player_channels` suite).

The player rows of the `live` suite (benchmarks/live_latency.py: stack, writer, clocks,
quantiles and the publisher's Redis CPU are that suite's) measure an acknowledged write to the
"you were overtaken" message at the watching player (docs/API.md, "Player channels"):

1. One all-time board, mode `best`, seeded with `players` players `SPACING` points apart; once the
   publisher has read the seeding, `watchers` of them, spread evenly over the ranks, watch it
   (`RedisIndex.watch`, what `PUT .../watch` calls) with a top N and a few friends each, chosen
   among the players just below them (the ones that can pass them).
2. A child process opens `connections` WebSocket connections and subscribes each watcher's
   player channel once, with a server-scope token (the way a game server would), plus the
   board's all-time channel on the first connection: its messages mark every version published.
3. The writer (live_latency's, in its own process) calls the submit script directly. Hot
   (`Moves`): each write raises a random player's score past about 1..`max_move` others. Quiet
   (`QuietMoves`): each write raises the player just below a random watcher just past it, so
   every write owes at least one player message.
4. A message's latency is its receipt minus the acknowledgement of the write that caused it: for
   a message naming who passed (`passed_by`), the last write of `passed_by[0]` with a version at
   most the message's; otherwise (entered or left the top N on its own, or passed with no passer
   named) the first write after the previous version published, the earliest write it can
   carry (conservative). Messages whose cause fell in the warm-up are left out of the quantiles.
   Each message's `published_at` splits it into the wait until the publisher built it and the
   publishing and fan-out after.
5. Missed messages are counted exactly, per watch: each message's `previous_rank` is the rank
   the player was last told, so it must equal the `rank` of the player's previous message (the
   first: the rank at the watch). After the drain, the watchers ranked lower than they were last
   told (passed, never told) are missed too, and `due_at_end` counts the watches still waiting
   over the publisher's budget (LIVE_MAX_WATCH_CHECKS).

The `player_channels` suite (`run`): the publisher script's Redis cost, with and without
watches, on a Valkey of its own (quiet, nothing else running): a board with the watches and its
twin without, the same writes (`rate / publish rate` a call) applied to both, then one
`LiveIndex.changes` call per board, timed, with `INFO commandstats` reset before it: the script's
usec, and the watches it ranked again (each costs one HGET of the watch hash; the script's other
HGETs are counted: its cursor, the channel's version, one per passer named).

The subscribers share one process and one event loop: "received" includes that loop's queueing
behind the other messages of the same publishing (real players each have their own machine).
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import time
from bisect import bisect_left, bisect_right
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from benchmarks.progress import progress

if TYPE_CHECKING:  # the child processes import this module: keep its imports light
    from leaderboard.stores.redis.serving_index import RedisIndex

SPACING = 10  # seeded scores are this far apart: a write raising a score by k * SPACING passes k
_DATA = b'{"type":"data"'
PLAYER_MESSAGE = "player.standing_changed"


@dataclass(frozen=True)
class Board:
    """A board with watching players, for the live suite's player rows."""

    players: int = 10_000  # on the board
    watchers: int = 1_000  # of them, watching it (one channel and subscription each)
    connections: int = 10  # WebSocket connections the subscriptions are spread over
    top_n: int = 100  # each watch's top N
    friends: int = 5  # each watch's friends, among the 200 players below it
    max_move: int = 20  # a hot write passes about 1..max_move players


@dataclass
class Settings:
    """The `player_channels` suite: the publisher script per call on a quiet Valkey."""

    rate: float = 1_000  # writes a second: `rate / publish rate` writes a call
    top_n: int = 100
    max_move: int = 20
    # (players, watchers) of the boards whose publisher script is timed
    cost_boards: tuple[tuple[int, int], ...] = ((10_000, 1_000), (100_000, 1_000))
    cost_ticks: int = 20  # publisher calls timed per board
    # A backlog call: this many changes read in one call (the publisher's scan limit), as after
    # the publisher was stopped for a while or a batch import, on the first cost board.
    backlog_writes: int = 5_000
    backlog_ticks: int = 3


def player_id(i: int) -> str:
    return f"p{i}"


def watcher_indexes(players: int, watchers: int) -> list[int]:
    """Watchers spread evenly over the seeded ranks (player i is seeded at rank players - i)."""
    step = players / watchers
    return [int(j * step + step / 2) for j in range(watchers)]


class Moves:
    """Writes that each raise a random player's score past about 1..max_move others (the scores
    start SPACING apart; the odd remainder keeps most scores distinct). Mode `best` applies every
    one. Deterministic per seed, so a twin board can take the very same writes."""

    def __init__(self, players: int, max_move: int, seed: str) -> None:
        self.scores = [SPACING * (i + 1) for i in range(players)]
        self.max_move = max_move
        self.random = random.Random(seed)

    def next(self) -> tuple[int, int]:
        i = self.random.randrange(len(self.scores))
        step = SPACING * self.random.randint(1, self.max_move) + self.random.randint(1, SPACING - 1)
        self.scores[i] += step
        return i, self.scores[i]


class QuietMoves(Moves):
    """Writes that each pass a watcher: the player just below a random watcher (by score now)
    is raised just past it, so every write owes that watcher a message."""

    def __init__(self, players: int, watched: list[int], seed: str) -> None:
        super().__init__(players, 1, seed)
        self.watched = watched

    def next(self) -> tuple[int, int]:
        scores = self.scores
        lowest = min(scores)
        target = self.random.choice([w for w in self.watched if scores[w] > lowest])
        below = max(
            (i for i in range(len(scores)) if scores[i] < scores[target]), key=scores.__getitem__
        )
        scores[below] = scores[target] + self.random.randint(1, SPACING - 1)
        return below, scores[below]


def moves(spec: tuple[Any, ...]) -> Moves:
    """The writes of a player row, from what the writer process is handed: ("hot", players,
    max_move, seed) or ("quiet", players, watched indexes, seed)."""
    kind, players, extra, seed = spec
    return (
        QuietMoves(players, list(extra), seed) if kind == "quiet" else Moves(players, extra, seed)
    )


# --- the board, its players and their watches --------------------------------------------------


def _seed(index: RedisIndex, board_id: str, players: int) -> None:
    from leaderboard.domain.clock import to_ms
    from leaderboard.domain.events import new_event_id
    from leaderboard.domain.periods import current_periods
    from leaderboard.domain.submissions import Submission
    from leaderboard.stores.redis.records import BatchWrite

    now = datetime.now(UTC)
    now_ms, periods = to_ms(now), current_periods(now)
    for start in range(0, players, 500):
        writes = [
            BatchWrite(
                Submission(player_id(i), SPACING * (i + 1), None, None), new_event_id(now_ms), None
            )
            for i in range(start, min(players, start + 500))
        ]
        for result in index.submit_many(board_id, writes, now_ms=now_ms, periods=periods):
            if isinstance(result, Exception):
                raise result


def _all_time() -> Any:
    from leaderboard.domain.live import Channel
    from leaderboard.domain.periods import current_period

    return Channel("all-time", current_period("all-time", datetime.now(UTC)).id, None)


def _watch(index: RedisIndex, board_id: str, shape: Board) -> dict[str, int]:
    """Every watcher's watch; the rank each starts from (the first previous_rank it is told)."""
    channel = _all_time()
    until_ms = int((time.time() + 3600) * 1000)
    picker = random.Random(f"friends-{board_id}")
    told: dict[str, int] = {}
    for i in watcher_indexes(shape.players, min(shape.watchers, shape.players)):
        below = list(range(max(0, i - 200), i))
        friends = tuple(player_id(j) for j in picker.sample(below, min(shape.friends, len(below))))
        standing = index.watch(
            board_id,
            player_id(i),
            channel,
            until_ms=until_ms,
            top_n=shape.top_n,
            friends=friends,
            keep_seconds=86_400,
        )
        assert standing.rank is not None, standing
        told[player_id(i)] = standing.rank
    return told


def _caught_up(client: Any, board_id: str, timeout: float) -> None:
    """Wait until the publisher has read the board's outbox to its end (the seeding)."""
    from leaderboard.stores.redis.keys import BoardKeys
    from leaderboard.stores.redis.live.channels import live_state_key

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = client.xrevrange(BoardKeys(board_id).outbox, count=1)
        if not last or client.hget(live_state_key(board_id), "cursor") == last[0][0]:
            return
        time.sleep(0.1)
    raise TimeoutError(f"the publisher did not read board {board_id}'s seeding in {timeout} s")


def prepare(client: Any, board_id: str, shape: Board) -> dict[str, int]:
    """Seed the board, wait for the publisher to read the seeding, then watch: the rank each
    watcher starts from."""
    from leaderboard.stores.redis.serving_index import RedisIndex

    index = RedisIndex(client)
    _seed(index, board_id, shape.players)
    _caught_up(client, board_id, 60)
    return _watch(index, board_id, shape)


def ranks_now(client: Any, board_id: str, players: list[str]) -> dict[str, int | None]:
    """Each player's rank as the publisher computes it (ties shared: 1 + the players ahead)."""
    from leaderboard.stores.redis.keys import BoardKeys

    zkey = BoardKeys(board_id).zset(_all_time().period_id)
    pipe = client.pipeline(transaction=False)
    for p in players:
        pipe.zscore(zkey, p)
    scores = pipe.execute()
    pipe = client.pipeline(transaction=False)
    for score in scores:
        pipe.zcount(zkey, f"({score}" if score is not None else "+inf", "+inf")
    counts = pipe.execute()
    return {
        p: (int(n) + 1 if s is not None else None)
        for p, s, n in zip(players, scores, counts, strict=True)
    }


def due_at_end(client: Any, board_id: str) -> int:
    """The board's watches still waiting for a check (over the publisher's budget)."""
    from leaderboard.stores.redis.keys import BoardKeys

    return int(client.scard(BoardKeys(board_id).watches_due(_all_time().period_id)))


# --- the subscribers (a child process) -------------------------------------------------------


def subscribers_main(
    conn: Connection,
    url: str,
    host: str,
    api_key: str,
    token: str,
    board_id: str,
    board_channel: str,
    channels: list[str],
    connections: int,
) -> None:
    try:
        import uvloop

        runner: Any = uvloop.run
    except ImportError:
        runner = asyncio.run
    try:
        result = runner(
            _subscribe_all(
                conn, url, host, api_key, token, board_id, board_channel, channels, connections
            )
        )
    except Exception as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    conn.send(("done", result))


async def _subscribe_all(
    conn: Connection,
    url: str,
    host: str,
    api_key: str,
    token: str,
    board_id: str,
    board_channel: str,
    channels: list[str],
    connections: int,
) -> dict[str, Any]:
    """Every player channel once over `connections` sockets, the board's channel on the first;
    say "ready", keep every data frame until told to stop, then decode them (a player channel
    carries the player's messages of every board: those of other boards are left out)."""
    from websockets.asyncio.client import connect
    from websockets.exceptions import ConnectionClosed
    from websockets.typing import Subprotocol

    from benchmarks.live_latency import expect
    from devstack.live_client import PROTOCOL, auth_subprotocol

    loop = asyncio.get_running_loop()
    protocols = [Subprotocol(PROTOCOL), Subprotocol(auth_subprotocol(host, api_key))]
    bearer = {"host": host, "Authorization": f"Bearer {token}"}
    frames: list[list[tuple[float, bytes]]] = [[] for _ in range(connections)]
    closed = [False] * connections

    async def open_one(i: int) -> Any:
        ws = await connect(
            url,
            subprotocols=protocols,
            compression=None,
            proxy=None,
            ping_interval=None,
            open_timeout=60,
            max_size=1 << 20,
        )
        await ws.send('{"type":"connection_init"}')
        await expect(ws, "connection_ack")
        wanted: list[tuple[str, str, dict[str, str]]] = [
            (f"p{i}-{n}", channel, bearer) for n, channel in enumerate(channels[i::connections])
        ]
        if i == 0:
            wanted.append(("board", board_channel, {"host": host, "x-api-key": api_key}))
        for sub_id, channel, auth in wanted:
            message = {"type": "subscribe", "id": sub_id, "channel": channel, "authorization": auth}
            await ws.send(json.dumps(message))
        pending = {sub_id for sub_id, _, _ in wanted}
        while pending:
            reply = json.loads(await asyncio.wait_for(ws.recv(), 60))
            if reply.get("type") == "subscribe_success":
                pending.discard(reply.get("id"))
            elif reply.get("type") != "ka":
                raise ConnectionError(f"subscribe: {reply}")
        return ws

    async def read(i: int, ws: Any) -> None:
        got = frames[i]
        try:
            while True:
                raw = await ws.recv(decode=False)
                if raw.startswith(_DATA):
                    got.append((time.monotonic(), raw))
        except ConnectionClosed:
            closed[i] = True

    sockets = await asyncio.gather(*(open_one(i) for i in range(connections)))
    readers = [loop.create_task(read(i, ws)) for i, ws in enumerate(sockets)]
    conn.send(("ready", len(channels)))
    await loop.run_in_executor(None, conn.recv)  # "stop"
    for task in readers:
        task.cancel()
    for ws in sockets:
        ws.transport.abort()
    players: list[tuple[float, str, int, int | None, int | None, list[str], str | None, str]] = []
    versions: dict[int, str] = {}  # the board channel's messages: version -> published_at
    foreign = 0
    for got in frames:
        for at, raw in got:
            event = json.loads(json.loads(raw)["event"])
            if event.get("board_id") != board_id:
                foreign += 1
            elif event.get("type") == PLAYER_MESSAGE:
                passers = event["passed_by"]
                players.append(
                    (
                        at,
                        event["player_id"],
                        event["version"],
                        event["rank"],
                        event["previous_rank"],
                        event["events"],
                        passers[0]["player_id"] if passers else None,
                        event["published_at"],
                    )
                )
            else:
                versions.setdefault(event["version"], event["published_at"])
    return {"players": players, "versions": versions, "foreign": foreign, "dropped": sum(closed)}


# --- the analysis ----------------------------------------------------------------------------


def analyse(
    writes: dict[str, Any], received: dict[str, Any], told: dict[str, int], ranks: dict[str, Any]
) -> dict[str, Any]:
    """Each message matched to the write that caused it, and what went missing. `writes`: the
    writer's acks (version, player, monotonic, wall clock), warm-up included (a measured message
    may name a warm-up write); `ranks`: every watcher's rank after the drain."""
    import numpy as np

    from benchmarks.live_latency import per_channel_second, quantile_ms, wall

    acks = writes["acks"]
    versions = [a[0] for a in acks]
    by_player: dict[str, tuple[list[int], list[float], list[float]]] = {}
    for version, i, at, at_wall in acks:
        own = by_player.setdefault(player_id(i), ([], [], []))
        own[0].append(version)
        own[1].append(at)
        own[2].append(at_wall)
    start, end = writes["measure_from"], writes["last_planned"]
    measured = acks[writes["warm_writes"] :]
    messages = sorted(received["players"], key=lambda m: (m[1], m[2]))
    # every version published: the board channel's messages, and the player messages' own
    published = sorted(set(received["versions"]) | {m[2] for m in messages})

    latencies, waits, delivery = [], [], []
    by_passer, unmatched, gaps = 0, 0, 0
    offset = time.time() - time.monotonic()  # monotonic -> wall clock, same machine
    events: dict[str, int] = {}
    stamps: dict[str, list[float]] = {"board": [wall(s) for s in received["versions"].values()]}
    last_told = dict(told)
    for at, player, version, rank, previous, kinds, passer, stamp in messages:
        if previous != last_told.get(player):
            gaps += 1  # a message this player never got
        last_told[player] = rank
        for kind in kinds:
            events[kind] = events.get(kind, 0) + 1
        stamps.setdefault(player, []).append(wall(stamp))
        cause: tuple[float, float] | None = None
        if passer is not None and passer in by_player:
            own_versions, own_times, own_walls = by_player[passer]
            k = bisect_right(own_versions, version) - 1
            if k >= 0:
                cause = own_times[k], own_walls[k]
                by_passer += 1
        if cause is None:
            before = published[bisect_left(published, version) - 1] if published[0] < version else 0
            k = bisect_right(versions, before)
            if k < len(versions) and versions[k] <= version:
                cause = acks[k][2], acks[k][3]
        if cause is None:
            unmatched += 1
        elif cause[0] >= start:
            latencies.append(at - cause[0])
            waits.append(wall(stamp) - cause[1])
            delivery.append(at + offset - wall(stamp))
    # passed since the last message: ranked lower now than last told
    untold = sum(1 for p, rank in ranks.items() if rank is not None and rank > (last_told[p] or 0))
    every = np.array(latencies)
    window = max(end - start, 1e-9)
    return {
        "writes": len(measured),
        "achieved_per_s": round(len(measured) / window, 1),
        "measured": len(latencies),
        "p50_ms": quantile_ms(every, 0.5),
        "p99_ms": quantile_ms(every, 0.99),
        "max_ms": quantile_ms(every, 1.0),
        "wait_p99_ms": quantile_ms(np.array(waits), 0.99),
        "delivery_p50_ms": quantile_ms(np.array(delivery), 0.5),
        "delivery_p99_ms": quantile_ms(np.array(delivery), 0.99),
        "missed": gaps + untold,
        "gaps": gaps,
        "untold_at_end": untold,
        "dropped": received["dropped"],
        "msgs_per_channel_s": per_channel_second(stamps),
        "player_messages": len(messages),
        "by_passer": by_passer,
        "unmatched": unmatched,
        "foreign": received["foreign"],
        "events": events,
    }


# --- the publisher script's cost, on a quiet Valkey (the player_channels suite) -------------


def _commandstats(client: Any) -> dict[str, dict[str, float]]:
    stats: dict[str, dict[str, float]] = client.info("commandstats")
    return stats


def script_cost(
    redis_url: str, players: int, watchers: int, settings: Settings, ticks: int
) -> list[dict[str, Any]]:
    """Two twin boards, one with `watchers` watches, the other with none; the same writes on
    both, `settings.rate / ticks` a call; each board's `LiveIndex.changes` timed alone."""
    from leaderboard.domain.boards import BoardConfig
    from leaderboard.domain.clock import to_ms
    from leaderboard.domain.events import new_event_id
    from leaderboard.domain.periods import current_periods
    from leaderboard.domain.submissions import Submission
    from leaderboard.stores.redis.client import connect
    from leaderboard.stores.redis.live.channels import BoardChannels
    from leaderboard.stores.redis.live.index import LiveIndex
    from leaderboard.stores.redis.records import BatchWrite
    from leaderboard.stores.redis.serving_index import RedisIndex

    client = connect(redis_url)
    index = RedisIndex(client)
    live = LiveIndex(client)
    channel = _all_time()
    tag = f"{players}-{watchers}"
    boards = {"with watches": f"pc-cost-w-{tag}", "without": f"pc-cost-n-{tag}"}
    for board_id in boards.values():
        index.publish_board(BoardConfig(board_id=board_id, mode="best", periods=("all-time",)))
        _seed(index, board_id, players)
    targets = {name: BoardChannels(b, (channel,), top=10) for name, b in boards.items()}
    for target in targets.values():  # the seeding read before the watches, as on the stack
        while True:
            (done,) = live.changes([target])
            assert not isinstance(done, Exception), done
            if not done.entries_read:
                break
    shape = Board(players=players, watchers=watchers, top_n=settings.top_n)
    _watch(index, boards["with watches"], shape)
    per_call = max(1, round(settings.rate / ticks))
    moves = Moves(players, settings.max_move, f"cost-{tag}")
    samples: dict[str, list[tuple[float, float, int, int]]] = {name: [] for name in boards}
    for _ in range(settings.cost_ticks):
        now = datetime.now(UTC)
        now_ms, periods = to_ms(now), current_periods(now)
        batch = [moves.next() for _ in range(per_call)]
        for board_id in boards.values():
            writes = [
                BatchWrite(Submission(player_id(i), s, None, None), new_event_id(now_ms), None)
                for i, s in batch
            ]
            index.submit_many(board_id, writes, now_ms=now_ms, periods=periods)
        for name, target in targets.items():
            client.config_resetstat()
            started = time.perf_counter()
            (result,) = live.changes([target])
            wall = time.perf_counter() - started
            stats = _commandstats(client)
            assert not isinstance(result, Exception), result
            script = stats.get("cmdstat_evalsha", {}).get("usec", 0.0)
            hgets = int(stats.get("cmdstat_hget", {}).get("calls", 0))
            passers = sum(len(u.passed_by) for u in result.player_updates)
            checks = max(0, hgets - 2 - passers)  # the cursor, the channel's version, passers
            samples[name].append((script, wall, checks, len(result.player_updates)))
    client.close()
    rows = []
    for name, got in samples.items():
        usec = [s[0] for s in got]
        rows.append(
            {
                "players": players,
                "watchers": watchers if name == "with watches" else 0,
                "writes_per_call": per_call,
                "calls": len(got),
                "script_us_p50": round(statistics.median(usec), 1),
                "script_us_max": round(max(usec), 1),
                "call_ms_p50": round(statistics.median(s[1] for s in got) * 1000, 2),
                "watch_checks_mean": round(statistics.fmean(s[2] for s in got), 1),
                "watch_checks_max": max(s[2] for s in got),
                "messages_per_call": round(statistics.fmean(s[3] for s in got), 1),
            }
        )
    return rows


def run(settings: Settings | None = None) -> dict[str, Any]:
    """The publisher script's cost per call, on a Valkey of its own."""
    from benchmarks.live_latency import publish_rate
    from devstack.servers import EmbeddedValkey

    settings = settings or Settings()
    started = time.perf_counter()
    ticks = publish_rate({})
    cost: list[dict[str, Any]] = []
    with EmbeddedValkey() as valkey:
        for players, watchers in settings.cost_boards:
            progress(f"player channels: script cost, {players:,} players, {watchers:,} watches")
            cost += script_cost(valkey.url, players, watchers, settings, ticks)
        if settings.backlog_writes and settings.cost_boards:
            players, watchers = settings.cost_boards[0]
            backlog = replace(
                settings, rate=settings.backlog_writes, cost_ticks=settings.backlog_ticks
            )
            cost += script_cost(valkey.url, players, watchers, backlog, 1)
    return {
        "settings": asdict(settings),
        "publish_rate": ticks,
        "seconds": round(time.perf_counter() - started, 1),
        "script_cost": cost,
    }


def main() -> int:
    for row in run()["script_cost"]:
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
