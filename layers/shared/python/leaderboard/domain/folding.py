"""What a batch of score events leaves behind: one row per standing and per player it changed.

The persister folds a batch here, in the function, so the database receives each row once,
already in key order, and never unpacks event JSON. The rules match the Redis script:

- A standing the event did not change (`changed` false) is skipped. Its state (score, and
  presence, which only a change or an eviction can alter) is the state the last change already
  wrote, so writing it again would only cost an upsert.
- Per (board, period, region, player) the newest version wins; an eviction at the same version
  as a standing (a player who pushed themself out) loses to it. `reached_version` is the newest
  version that changed the score: the tie order of a ties=first board (of a sharded one, that
  change's arrival, kept beside it: shards have no common version).
- Per (board, player) the newest metadata wins; at the same version an eviction that left the
  player on no board ("gone") clears it.
- Team boards: per (board, period, region, team, player) the newest contribution wins.

Versions order the rows across batches too: the database keeps whichever version is newer, so
batches may arrive in any order and any number of times.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

# board, period, region, player, score, version, reached_version, present, reached_arrival,
# tie_key (tie-breaker boards: the tie-breakers' ordering key, which moves with the score)
StandingRow = tuple[str, str, str, str, float, int, int | None, bool, int | None, str | None]
# board, player, metadata JSON (None: clear it), version
MetadataRow = tuple[str, str, str | None, int]
# board, period, region, team, player, contribution, version
TeamRow = tuple[str, str, str, str, str, float, int]


class StandingChange(Protocol):
    @property
    def period(self) -> str: ...
    @property
    def region(self) -> str | None: ...
    @property
    def score(self) -> int | float: ...
    @property
    def present(self) -> bool: ...
    @property
    def changed(self) -> bool: ...
    @property
    def tie_key(self) -> str | None: ...
    @property
    def team_contribution(self) -> int | float | None: ...


class EvictionNotice(Protocol):
    @property
    def period(self) -> str: ...
    @property
    def region(self) -> str | None: ...
    @property
    def player_id(self) -> str: ...
    @property
    def gone(self) -> bool: ...


class FoldableEvent(Protocol):
    """A score event as the write path sends it (ScoreEvent) or the persister decodes it."""

    @property
    def board_id(self) -> str: ...
    @property
    def player_id(self) -> str: ...
    @property
    def version(self) -> int: ...
    @property
    def metadata(self) -> Mapping[str, Any] | None: ...
    @property
    def standings(self) -> Sequence[StandingChange]: ...
    @property
    def evictions(self) -> Sequence[EvictionNotice]: ...
    @property
    def arrival(self) -> int | None: ...
    @property
    def team_id(self) -> str | None: ...


@dataclass
class FoldedBatch:
    standings: list[StandingRow] = field(default_factory=list)
    metadata: list[MetadataRow] = field(default_factory=list)
    teams: list[TeamRow] = field(default_factory=list)


def fold_events(events: Iterable[FoldableEvent]) -> FoldedBatch:
    """The standings and metadata rows a batch writes, each sorted by its key.

    Sorted keys give every concurrent persister the same lock order (no deadlocks) and walk
    the primary key's B-tree in order.
    """
    # (board, period, region) -> player ->
    #     [version, is_eviction, score, present, reached version, its arrival, tie key]
    # Grouped so that sorting compares player ids, not 4-tuples: half the fold's time went
    # into tuple comparisons.
    boards: dict[tuple[str, str, str], dict[str, list[Any]]] = {}
    # (board, player) -> (version, gone, metadata JSON)
    meta: dict[tuple[str, str], tuple[int, bool, str | None]] = {}
    # (board, period, region, team, player) -> (version, contribution)
    teams: dict[tuple[str, str, str, str, str], tuple[int, float]] = {}
    for event in events:
        board, player, version = event.board_id, event.player_id, event.version
        arrival = event.arrival  # sharded ties=first boards: what orders the ties
        team = event.team_id
        for standing in event.standings:
            if not standing.changed:
                continue
            if team is not None and standing.team_contribution is not None:
                at = (board, standing.period, standing.region or "", team, player)
                if at not in teams or version > teams[at][0]:
                    teams[at] = (version, float(standing.team_contribution))
            group = boards.setdefault((board, standing.period, standing.region or ""), {})
            old = group.get(player)
            if old is None:
                group[player] = [
                    version,
                    False,
                    float(standing.score),
                    standing.present,
                    version,
                    arrival,
                    standing.tie_key,
                ]
                continue
            if version > old[0] or (version == old[0] and old[1]):
                old[:4] = version, False, float(standing.score), standing.present
                old[6] = standing.tie_key
            if old[4] is None or version > old[4]:
                old[4:6] = version, arrival
        for eviction in event.evictions:
            group = boards.setdefault((board, eviction.period, eviction.region or ""), {})
            old = group.get(eviction.player_id)
            if old is None:
                group[eviction.player_id] = [version, True, 0.0, False, None, None, None]
            elif version > old[0]:
                old[:4] = version, True, 0.0, False
            if eviction.gone:
                owner = (board, eviction.player_id)
                seen = meta.get(owner)
                if seen is None or version > seen[0] or (version == seen[0] and not seen[1]):
                    meta[owner] = (version, True, None)
        if event.metadata is not None:
            owner = (board, player)
            seen = meta.get(owner)
            if seen is None or version > seen[0]:
                meta[owner] = (version, False, json.dumps(event.metadata, separators=(",", ":")))
    return FoldedBatch(
        standings=[
            (
                board,
                period,
                region,
                player,
                state[2],
                state[0],
                state[4],
                state[3],
                state[5],
                state[6],
            )
            for (board, period, region), group in sorted(boards.items())
            for player, state in sorted(group.items())
        ],
        metadata=[
            (board, player, value, version)
            for (board, player), (version, _, value) in sorted(meta.items())
        ],
        teams=[
            (*key, contribution, version) for key, (version, contribution) in sorted(teams.items())
        ],
    )
