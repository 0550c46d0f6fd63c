"""The live publisher's reads of the serving index: each board's changes since its last read.

One pipeline per read carries one `live.lua` call per board, so a read costs one network round
trip however many boards it reads (one per node on a cluster) and each board's message is built
from that board's single script call.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from redis.exceptions import NoScriptError

from leaderboard.domain.live import (
    DEFAULT_MAX_CHANGED,
    Channel,
    ChannelUpdate,
    LiveEntry,
    Passer,
    PlayerUpdate,
)
from leaderboard.domain.validation import format_score
from leaderboard.stores.redis.client import RedisLike, queue_script, spublish
from leaderboard.stores.redis.keys import CATALOG_KEY, HAND_OVER, LIVE_CONTROL_CHANNEL, BoardKeys
from leaderboard.stores.redis.live.channels import (
    DEFAULT_WATCH_CHECKS,
    LEASE_KEY,
    NEXT_DUE_KEY,
    SUCCESSOR_KEY,
    WATCHED_RANKS_SECONDS,
    BoardChanges,
    BoardChannels,
    live_state_key,
)
from leaderboard.stores.redis.live.sharded import sharded_changes
from leaderboard.stores.redis.live.wakes import WakeListener
from leaderboard.stores.redis.records import read_tiebreakers
from leaderboard.stores.redis.scripts import load_script, script_sha


class LiveIndex:
    def __init__(
        self,
        client: RedisLike,
        *,
        scan_limit: int = 5000,
        max_changed: int = DEFAULT_MAX_CHANGED,
        max_watch_checks: int = DEFAULT_WATCH_CHECKS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.client = client
        self.scan_limit = scan_limit
        self.max_changed = max_changed
        self.max_watch_checks = max_watch_checks
        self.clock = clock
        self._source = load_script(__package__ or "", "live")
        self._sha = script_sha(self._source)

    def catalog(self) -> list[dict[str, Any]]:
        """Every published board's public object (rules, periods, regions, live_top)."""
        return [json.loads(raw) for raw in self.client.hvals(CATALOG_KEY)]

    def changes(self, boards: list[BoardChannels]) -> list[BoardChanges | Exception]:
        """Each board's changes since its last call, in the order given; a board whose script
        failed gets its exception, so one bad board never hides the others' changes."""
        if not boards:
            return []
        plain = [board for board in boards if board.shards <= 1]
        sharded = [board for board in boards if board.shards > 1]
        found: dict[str, BoardChanges | Exception] = {}
        if plain:
            found.update(zip((b.board_id for b in plain), self._plain(plain), strict=True))
        if sharded:
            found.update(
                zip(
                    (b.board_id for b in sharded),
                    sharded_changes(self.client, sharded, self.scan_limit, self.max_changed),
                    strict=True,
                )
            )
        return [found[board.board_id] for board in boards]

    def _plain(self, boards: list[BoardChannels]) -> list[BoardChanges | Exception]:
        try:
            replies = self._run(boards)
        except NoScriptError:
            self.client.script_load(self._source)  # after a restart or failover of Redis
            replies = self._run(boards)
        results: list[BoardChanges | Exception] = []
        for board, reply in zip(boards, replies, strict=True):
            if isinstance(reply, Exception):
                results.append(reply)
                continue
            try:
                results.append(_parse(board, reply))
            except (ValueError, IndexError, TypeError) as exc:
                results.append(exc)
        return results

    def _run(self, boards: list[BoardChannels]) -> list[Any]:
        pipe = self.client.pipeline(transaction=False)
        for board in boards:
            keys = BoardKeys(board.board_id)
            script_keys = [
                keys.cfg,
                keys.outbox,
                live_state_key(board.board_id),
                keys.seq,
                keys.meta,
            ]
            args: list[Any] = [self.scan_limit, board.top, self.max_changed, len(board.channels)]
            for channel in board.channels:
                script_keys += [
                    keys.zset(channel.period_id, channel.region),
                    keys.members(channel.period_id, channel.region),
                    keys.watches(channel.period_kind, channel.region),
                    keys.watched_ranks(channel.period_id, channel.region),
                    keys.watches_due(channel.period_id, channel.region),
                ]
                args += [channel.period_kind, channel.period_id, channel.region or ""]
            args += [int(self.clock() * 1000), self.max_watch_checks, WATCHED_RANKS_SECONDS]
            queue_script(pipe, self.client, self._sha, script_keys, args)
        replies: list[Any] = pipe.execute(raise_on_error=False)
        if any(isinstance(r, NoScriptError) for r in replies):
            raise NoScriptError("live script not loaded")
        return replies

    # --- one publisher at a time ----------------------------------------------------------
    def take_lease(self, owner: str, ttl_ms: int) -> bool:
        """Take the publisher lease if it is free or already ours (then extend it)."""
        return bool(self._lease_call(self.client, owner, ttl_ms))

    def renew_lease(self, owner: str, ttl_ms: int) -> tuple[bool, bool]:
        """(whether `owner` holds the lease now, renewed; whether another run waits to take
        over), in one round trip: the running publisher's heartbeat, every 1/rate."""
        pipe = self.client.pipeline(transaction=False)
        pipe.get(SUCCESSOR_KEY)
        queue_script(pipe, self.client, _LEASE_SHA, [LEASE_KEY], [owner, ttl_ms])
        waiting, held = pipe.execute(raise_on_error=False)
        if isinstance(held, NoScriptError):  # after a restart or failover of Redis
            held = self._lease_call(self.client, owner, ttl_ms)
        for reply in (waiting, held):
            if isinstance(reply, Exception):
                raise reply
        return bool(held), waiting is not None and waiting != owner

    @staticmethod
    def _lease_call(client: RedisLike, owner: str, ttl_ms: int) -> Any:
        try:
            return client.evalsha(_LEASE_SHA, 1, LEASE_KEY, owner, ttl_ms)
        except NoScriptError:
            client.script_load(_LEASE)
            return client.evalsha(_LEASE_SHA, 1, LEASE_KEY, owner, ttl_ms)

    def release_lease(self, owner: str) -> None:
        self.client.eval(_RELEASE, 1, LEASE_KEY, owner)

    def ask_to_hand_over(self, owner: str, ttl_ms: int) -> None:
        """Tell the running publisher a newer run is waiting (woken, it stops at once)."""
        self.client.set(SUCCESSOR_KEY, owner, px=ttl_ms)
        spublish(self.client, LIVE_CONTROL_CHANNEL, HAND_OVER)

    def leave_due(self, due_ms: dict[str, int], ttl_ms: int) -> None:
        """What the next run must respect: each board's next allowed message (epoch ms)."""
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(NEXT_DUE_KEY)
        if due_ms:
            pipe.hset(NEXT_DUE_KEY, mapping=due_ms)
            pipe.pexpire(NEXT_DUE_KEY, ttl_ms)
        pipe.execute()

    def left_due(self) -> dict[str, int]:
        """The boards' next allowed messages a previous run left (epoch ms)."""
        raw = self.client.hgetall(NEXT_DUE_KEY)
        return {(k.decode() if isinstance(k, bytes) else k): int(v) for k, v in raw.items()}

    def listener(self) -> WakeListener:
        """A new listener to the writes' wake-ups and the control channel (wakes.py)."""
        return WakeListener(self.client)


# Take the lease if it is free or ours, and set its time to live: one script, sent by its SHA.
_LEASE = """
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""
_LEASE_SHA = script_sha(_LEASE)
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _entry(
    player: str, score: str, rank: Any, meta: str, tiebreakers: dict[str, int] | None = None
) -> LiveEntry:
    return LiveEntry(
        player_id=player,
        rank=int(rank) if rank != "" else None,
        score=format_score(float(score)) if score != "" else None,
        metadata=json.loads(meta) if meta else None,
        tiebreakers=tiebreakers,
    )


def _parse(board: BoardChannels, reply: Any) -> BoardChanges:
    status = reply[0]
    if status in ("IDLE", "GONE"):
        return BoardChanges(board.board_id, ())
    skipped, read = int(reply[1]), int(reply[2])
    updates = []
    players: list[PlayerUpdate] = []
    for item in reply[3:]:
        kind, period, region, version, previous, total, top, moved, truncated, metas, tbs = item[
            :11
        ]
        channel = Channel(kind, period, region or None)
        players.extend(
            _player_update(board.board_id, channel, int(version), int(total), w) for w in item[11]
        )
        n_top = len(top) // 3
        n_moved = len(moved) // 4
        tbs = read_tiebreakers(tbs, n_top + n_moved)  # tie-breaker boards only
        top_entries = tuple(
            _entry(top[i * 3], top[i * 3 + 1], top[i * 3 + 2], metas[i], tbs[i])
            for i in range(n_top)
        )
        changed = tuple(
            replace(
                _entry(
                    moved[i * 4],
                    moved[i * 4 + 1],
                    moved[i * 4 + 2],
                    metas[n_top + i],
                    tbs[n_top + i],
                ),
                moved=True,
                previous_rank=int(moved[i * 4 + 3]) if moved[i * 4 + 3] else None,
            )
            for i in range(n_moved)
        )
        updates.append(
            ChannelUpdate(
                board_id=board.board_id,
                channel=channel,
                version=int(version),
                previous_version=int(previous) if previous else None,
                total=int(total),
                top=top_entries,
                changed=changed,
                changed_truncated=bool(int(truncated)),
            )
        )
    return BoardChanges(
        board.board_id,
        tuple(updates),
        entries_read=read,
        skipped=skipped,
        player_updates=tuple(players),
    )


def _player_update(
    board_id: str, channel: Channel, version: int, total: int, reply: Any
) -> PlayerUpdate:
    player, score, rank, told, top_n, events, more, flat = reply[:8]
    place = reply[8] if len(reply) > 8 and reply[8] else ""
    passers = tuple(
        Passer(_entry(flat[i], flat[i + 1], flat[i + 2], flat[i + 4]), flat[i + 3] == 1)
        for i in range(0, len(flat), 5)
    )
    return PlayerUpdate(
        player_id=player,
        board_id=board_id,
        channel=channel,
        version=version,
        rank=int(rank) if rank != "" else None,
        previous_rank=int(told) if told != "" else None,
        score=format_score(float(score)) if score != "" else None,
        top_n=int(top_n),
        events=tuple(events.split(",")),
        passed_by=passers,
        passed_by_truncated=bool(int(more)),
        total=total,
        league_place=tuple(place.split(" ")) if place else None,
    )
