"""The score event: what the queue carries from the write path to the system of record.

Events are delivered at least once and possibly out of order; `event_id` makes a duplicate
harmless and `version` (a per-board sequence, so increasing for every player) tells the
persister which state is newer. The persister reads them back with
leaderboard.domain.queue_messages.
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import asdict, dataclass
from typing import Any

SCHEMA_VERSION = 1


def event_id_at(ms: int, random_bits: int) -> str:
    """A UUIDv7 (RFC 9562): Unix milliseconds first, then 74 random bits.

    Time-ordered ids make the event log's primary key grow at its right edge, so at hundreds
    of millions of events an insert touches the few pages that are already cached instead of
    a random leaf of a large index. Uniqueness comes from the random bits, not the clock.
    """
    value = (ms & 0xFFFF_FFFF_FFFF) << 80 | random_bits & ((1 << 80) - 1)
    value = value & ~(0xF << 76) | 0x7 << 76  # version 7
    value = value & ~(0x3 << 62) | 0x2 << 62  # the RFC variant
    return str(uuid.UUID(int=value))


def new_event_id(ms: int) -> str:
    return event_id_at(ms, int.from_bytes(os.urandom(10), "big"))


@dataclass(frozen=True, slots=True)
class Standing:
    """A player's standing in one period/region after a submission (rank None: trimmed, or
    `unranked`: on a sharded board, where a submission reaches one shard and a rank takes all)."""

    period: str
    region: str | None
    score: int | float
    rank: int | None
    changed: bool = True
    unranked: bool = False
    # The entry before this submission: None for a new entry (previous_rank also on a sharded
    # board, where ranks are read across shards).
    previous_score: int | float | None = None
    previous_rank: int | None = None
    # Tie-breaker boards: the kept entry's tie key (as stored) and its columns' values.
    tie_key: str | None = None
    tiebreakers: dict[str, int] | None = None
    # Team boards: the player's contribution to the submission's team after it (None: none)
    team_contribution: int | float | None = None

    @property
    def present(self) -> bool:
        """Still on the board: max_entries did not trim this player out."""
        return self.rank is not None or self.unranked

    def to_json(self) -> dict[str, Any]:
        """The response form: the `changed` flag is for the system of record only."""
        return {
            "period": self.period,
            "region": self.region,
            "score": self.score,
            "rank": self.rank,
            "previous_score": self.previous_score,
            "previous_rank": self.previous_rank,
        } | ({"tiebreakers": self.tiebreakers} if self.tiebreakers is not None else {})


@dataclass(frozen=True, slots=True)
class Eviction:
    """An entry that max_entries pushed out; `gone`: the player is left on no board of it."""

    period: str
    region: str | None
    player_id: str
    gone: bool


@dataclass(frozen=True, slots=True)
class ScoreEvent:
    event_id: str
    board_id: str
    player_id: str
    operation: str
    submitted_score: int | float
    region: str | None
    metadata: dict[str, Any] | None
    version: int
    applied: bool
    occurred_at_ms: int
    standings: tuple[Standing, ...]
    evictions: tuple[Eviction, ...] = ()
    # Sharded ties=first boards: the arrival that orders this player's ties (domain/shards.py)
    arrival: int | None = None
    # The board's validation hook on it: accept, flag or failed_open (None: the board has none)
    hook_verdict: str | None = None
    hook_reason: str | None = None
    # Team boards: the team the submission's contribution went to (None: none)
    team_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = {
            "schema": SCHEMA_VERSION,
            "type": "score_submitted",
            "event_id": self.event_id,
            "board_id": self.board_id,
            "player_id": self.player_id,
            "operation": self.operation,
            "submitted_score": self.submitted_score,
            "region": self.region,
            "metadata": self.metadata,
            "version": self.version,
            "applied": self.applied,
            "occurred_at_ms": self.occurred_at_ms,
            "scores": [_score_json(s) for s in self.standings],
            "evicted": [asdict(e) for e in self.evictions],
        }
        if self.arrival is not None:
            data["arrival"] = self.arrival
        if self.hook_verdict is not None:  # boards without a hook send what they always sent
            data["hook_verdict"] = self.hook_verdict
            data["hook_reason"] = self.hook_reason
        if self.team_id is not None:
            data["team_id"] = self.team_id
        return data

    def to_message(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))


def _score_json(standing: Standing) -> dict[str, Any]:
    """One entry of the event's `scores`; on tie-breaker boards with the kept tie-breakers and
    their ordering key (what the record orders by and a rebuild restores)."""
    body: dict[str, Any] = {
        "period": standing.period,
        "region": standing.region,
        "score": standing.score,
        "present": standing.present,
        "changed": standing.changed,
    }
    if standing.tie_key is not None:
        body["tiebreakers"] = standing.tiebreakers
        body["tie_key"] = standing.tie_key
    if standing.team_contribution is not None:
        body["team_contribution"] = standing.team_contribution
    return body
