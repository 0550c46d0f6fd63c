"""The live publisher's reads of sharded boards: two rounds a read when a board changed, one
when none did.

Round 1 (live_shard.lua on every shard): each shard's new outbox entries, the players they
changed with their current score and metadata (a player lives on one shard), and the shard's
version counter. Round 2 (sharded/shard_read.lua, for the channels that changed): every shard's top
entries and, for each changed player, how many members are before it, merged exactly as the
reads merge them (leaderboard/domain/shards.py). A channel's version is the sum of its board's
shard counters, which grows with every write to any shard; the version chain lives in the
board's own live state hash.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import NoScriptError

from leaderboard.domain.live import ChannelUpdate, LiveEntry
from leaderboard.domain.shards import Run, merge_runs, shard_board_id, strip_member
from leaderboard.domain.validation import format_score
from leaderboard.stores.redis.client import RedisLike, queue_script
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.live.channels import BoardChanges, BoardChannels, live_state_key
from leaderboard.stores.redis.rules import WriteRules
from leaderboard.stores.redis.scripts import load_script, script_sha
from leaderboard.stores.redis.sharded.rounds import parse_run

_LIVE = load_script(__package__ or "", "live_shard")
_LIVE_SHA = script_sha(_LIVE)
_READ = load_script("leaderboard.stores.redis.sharded", "shard_read")
_READ_SHA = script_sha(_READ)


@dataclass
class _Changed:
    """One channel's changed players over all shards: (player, member, score, metadata)."""

    players: list[tuple[str, str, str, str]] = field(default_factory=list)
    newest: list[tuple[str, int]] = field(default_factory=list)  # (stream id, first index)
    truncated: bool = False


@dataclass
class _Board:
    board: BoardChannels
    cfg: str = ""
    version: int = 0
    read: int = 0
    skipped: int = 0
    changed: dict[int, _Changed] = field(default_factory=dict)
    error: Exception | None = None
    # per changed channel: (channel number, total, top, changed entries); previous versions
    updates: list[tuple[int, int, tuple[LiveEntry, ...], tuple[LiveEntry, ...]]] = field(
        default_factory=list
    )
    previous: dict[int, str | None] = field(default_factory=dict)


def sharded_changes(
    client: RedisLike, boards: list[BoardChannels], scan_limit: int, max_changed: int
) -> list[BoardChanges | Exception]:
    states = [_Board(board) for board in boards]
    _round_one(client, states, scan_limit, max_changed)
    _round_two(client, [s for s in states if s.error is None and s.changed], max_changed)
    out: list[BoardChanges | Exception] = []
    for state in states:
        out.append(state.error if state.error is not None else _result(state))
    return out


def _execute(client: RedisLike, calls: list[tuple[str, str, list[str], list[Any]]]) -> list[Any]:
    """One pipeline of script calls (source, sha, keys, args), loading a script a restarted
    node lost."""
    for attempt in range(2):
        pipe = client.pipeline(transaction=False)
        for _, sha, keys, args in calls:
            queue_script(pipe, client, sha, keys, args)
        replies: list[Any] = pipe.execute(raise_on_error=False)
        missing = {
            c[0] for c, r in zip(calls, replies, strict=True) if isinstance(r, NoScriptError)
        }
        if not missing or attempt:
            return replies
        for source in missing:
            client.script_load(source)
    return replies


def _round_one(client: RedisLike, states: list[_Board], scan_limit: int, max_changed: int) -> None:
    calls, owners = [], []
    for state in states:
        board = state.board
        for shard in range(board.shards):
            name = shard_board_id(board.board_id, shard, board.shards)
            keys = BoardKeys(name)
            script_keys = [keys.cfg, keys.outbox, live_state_key(name), keys.seq, keys.meta]
            args: list[Any] = [scan_limit, max_changed, len(board.channels)]
            for channel in board.channels:
                script_keys += [
                    keys.zset(channel.period_id, channel.region),
                    keys.members(channel.period_id, channel.region),
                ]
                args += [channel.period_id, channel.region or ""]
            calls.append((_LIVE, _LIVE_SHA, script_keys, args))
            owners.append(state)
    for state, reply in zip(owners, _execute(client, calls), strict=True):
        if state.error is not None:
            continue
        if isinstance(reply, Exception):
            state.error = reply
            continue
        if reply[0] == "GONE":
            state.changed.clear()
            state.error = _Gone()
            continue
        state.skipped += int(reply[1])
        state.read += int(reply[2])
        state.version += int(reply[3])
        state.cfg = reply[4].rstrip(" ")  # the space of a shard hiding players (hidden.lua)
        for ch, part in enumerate(reply[5:]):
            count, truncated, newest = int(part[0]), bool(int(part[1])), part[2]
            if not count:
                continue
            changed = state.changed.setdefault(ch, _Changed())
            changed.truncated = changed.truncated or truncated
            changed.newest.append((newest, len(changed.players)))
            for i in range(count):
                player, member, score, meta = part[3 + 4 * i : 7 + 4 * i]
                changed.players.append((player, member, score, meta))
    for state in states:
        if isinstance(state.error, _Gone):
            state.error = None  # a board deleted since the catalog was read: no message


class _Gone(Exception):
    pass


def _round_two(client: RedisLike, states: list[_Board], max_changed: int) -> None:
    """Tops and ranks of the changed channels, one pipeline for every board."""
    calls: list[tuple[str, str, list[str], list[Any]]] = []
    plan: list[tuple[_Board, int, int, str]] = []  # (board, channel, shard, op)
    for state in states:
        board = state.board
        rules = json.loads(state.cfg)
        head = ["1" if rules["sort"] == "desc" else "", "1" if rules["ties"] == "first" else ""]
        for ch, changed in state.changed.items():
            _keep_newest(changed, max_changed)
            channel = board.channels[ch]
            present = [(m, s) for _, m, s, _ in changed.players if m]
            for shard in range(board.shards):
                keys = BoardKeys(shard_board_id(board.board_id, shard, board.shards))
                zset = keys.zset(channel.period_id, channel.region)
                base = [keys.cfg, keys.meta, keys.archived, zset]
                calls.append(
                    (
                        _READ,
                        _READ_SHA,
                        base,
                        ["range", state.cfg, *head, 0, board.top - 1, "1", channel.period_id],
                    )
                )
                plan.append((state, ch, shard, "range"))
                if present:
                    queries: list[Any] = []
                    for member, score in present:
                        queries += [1, score, member]
                    calls.append(
                        (
                            _READ,
                            _READ_SHA,
                            base,
                            ["count", state.cfg, *head, 0, "", len(present), "", *queries],
                        )
                    )
                    plan.append((state, ch, shard, "count"))
    replies = _execute(client, calls) if calls else []
    tops: dict[tuple[int, int], list[tuple[Run, dict[str, str]]]] = {}
    counts: dict[tuple[int, int], list[list[Any]]] = {}
    for (state, ch, _, op), reply in zip(plan, replies, strict=True):
        if state.error is not None:
            continue
        if isinstance(reply, Exception) or reply[0] != "OK":
            state.error = reply if isinstance(reply, Exception) else RuntimeError(str(reply))
            continue
        keyed = WriteRules.parse(state.cfg).keyed
        if op == "range":
            tops.setdefault((id(state), ch), []).append(parse_run(reply, 2, True, keyed))
        else:
            counts.setdefault((id(state), ch), []).append(reply)
    for state in states:
        if state.error is not None:
            continue
        rules = WriteRules.parse(state.cfg)
        desc, first = rules.desc, rules.first
        for ch, changed in sorted(state.changed.items()):
            parts = tops[(id(state), ch)]
            runs = [run for run, _ in parts]
            metas: dict[str, str] = {}
            for _, meta in parts:
                metas.update(meta)
            placed = merge_runs(runs, desc, first, rules.group)[: state.board.top]
            top = tuple(
                _entry(
                    strip_member(p.member, rules.keyed),
                    p.score,
                    p.rank,
                    metas,
                    rules.member_tiebreakers(p.member),
                )
                for p in placed
            )
            ranked = [p for p in changed.players if p[1]]
            better = [0] * len(ranked)
            for reply in counts.get((id(state), ch), []):
                for q in range(len(ranked)):
                    better[q] += int(reply[2 + 3 * q])
            ranks = {p[0]: better[q] + 1 for q, p in enumerate(ranked)}
            moved = tuple(
                LiveEntry(
                    player_id=player,
                    rank=ranks[player] if member else None,
                    score=format_score(float(score)) if member else None,
                    metadata=json.loads(meta) if meta else None,
                    moved=True,
                    tiebreakers=rules.member_tiebreakers(member) if member else None,
                )
                for player, member, score, meta in changed.players
            )
            state.updates.append((ch, sum(run.total for run in runs), top, moved))
    _chain_versions(client, states)


def _keep_newest(changed: _Changed, max_changed: int) -> None:
    """Each shard lists its changes newest first; over all shards the newest are kept, shards
    ordered by their newest change (by each node's own stream clock)."""
    if len(changed.players) <= max_changed:
        return
    order: list[tuple[str, str, str, str]] = []
    starts = sorted(
        changed.newest, key=lambda item: tuple(int(x) for x in item[0].split("-")), reverse=True
    )
    bounds = [*sorted(start for _, start in changed.newest), len(changed.players)]
    for _, start in starts:
        end = bounds[bounds.index(start) + 1]
        order.extend(changed.players[start:end])
    changed.players = order[:max_changed]
    changed.truncated = True


def _chain_versions(client: RedisLike, states: list[_Board]) -> None:
    """Each channel's previous message version, kept in the board's own live state."""
    pipe = client.pipeline(transaction=False)
    asked = []
    for state in states:
        for ch, *_ in state.updates:
            channel = state.board.channels[ch]
            name = f"v:{channel.period_kind}:{channel.region or ''}"
            key = live_state_key(state.board.board_id)
            pipe.hget(key, name)
            pipe.hset(key, name, state.version)
            asked.append((state, ch))
    replies = pipe.execute() if asked else []
    previous = {(id(s), ch): replies[2 * n] for n, (s, ch) in enumerate(asked)}
    for state in states:
        state.previous = {ch: previous.get((id(state), ch)) for ch, *_ in state.updates}


def _entry(
    player: str,
    score: float,
    rank: int,
    metas: dict[str, str],
    tiebreakers: dict[str, int] | None = None,
) -> LiveEntry:
    meta = metas.get(player)
    return LiveEntry(
        player_id=player,
        rank=rank,
        score=format_score(score),
        metadata=json.loads(meta) if meta else None,
        tiebreakers=tiebreakers,
    )


def _result(state: _Board) -> BoardChanges:
    updates = []
    for ch, total, top, moved in state.updates:
        previous = state.previous.get(ch)
        changed = state.changed[ch]
        updates.append(
            ChannelUpdate(
                board_id=state.board.board_id,
                channel=state.board.channels[ch],
                version=state.version,
                previous_version=int(previous) if previous else None,
                total=total,
                top=top,
                changed=moved,
                changed_truncated=changed.truncated,
            )
        )
    return BoardChanges(
        state.board.board_id, tuple(updates), entries_read=state.read, skipped=state.skipped
    )
