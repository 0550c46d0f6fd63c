"""The score event: what the queue carries from the write path to the system of record.

Events are delivered at least once and possibly out of order; `event_id` makes a duplicate
harmless and `version` (a per-board sequence, so increasing for every player) tells the
persister which state is newer.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass
from typing import Any

SCHEMA_VERSION = 1


@dataclass(frozen=True, slots=True)
class Standing:
    """A player's standing in one period/region after a submission (rank None: trimmed)."""

    period: str
    region: str | None
    score: int | float
    rank: int | None
    changed: bool = True

    def to_json(self) -> dict[str, Any]:
        """The response form: the `changed` flag is for the system of record only."""
        return {
            "period": self.period,
            "region": self.region,
            "score": self.score,
            "rank": self.rank,
        }


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

    def to_json(self) -> dict[str, Any]:
        return {
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
            "scores": [
                {
                    "period": s.period,
                    "region": s.region,
                    "score": s.score,
                    "present": s.rank is not None,
                    "changed": s.changed,
                }
                for s in self.standings
            ],
            "evicted": [asdict(e) for e in self.evictions],
        }

    def to_message(self) -> str:
        return json.dumps(self.to_json(), separators=(",", ":"))


class InvalidEvent(ValueError):
    """A queue message that is not a score event this version understands (a poison record)."""


def _field(data: dict[str, Any], name: str, kinds: type | tuple[type, ...]) -> Any:
    value = data.get(name)
    allowed = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
        raise InvalidEvent(f"field {name!r} is missing or has the wrong type")
    return value


def parse_event(body: str) -> ScoreEvent:
    """Parse and check a queue message; anything malformed raises InvalidEvent."""
    try:
        data = json.loads(body)
    except (ValueError, TypeError) as exc:
        raise InvalidEvent(f"not JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA_VERSION:
        raise InvalidEvent("not a score event of schema version 1")
    if data.get("type") != "score_submitted":
        raise InvalidEvent(f"unknown event type {data.get('type')!r}")
    number = (int, float)
    try:
        standings = tuple(
            Standing(
                period=_field(s, "period", str),
                region=s.get("region"),
                score=_field(s, "score", number),
                rank=1 if _field(s, "present", bool) else None,
                changed=_field(s, "changed", bool),
            )
            for s in _field(data, "scores", list)
        )
        evictions = tuple(
            Eviction(
                period=_field(e, "period", str),
                region=e.get("region"),
                player_id=_field(e, "player_id", str),
                gone=_field(e, "gone", bool),
            )
            for e in data.get("evicted") or []
        )
    except (AttributeError, TypeError):
        raise InvalidEvent("malformed scores or evictions") from None
    event_id = _field(data, "event_id", str)
    try:
        uuid.UUID(event_id)
    except ValueError:
        raise InvalidEvent("event_id is not a UUID") from None
    metadata = data.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise InvalidEvent("metadata must be an object or null")
    version = _field(data, "version", int)
    if version < 1:
        raise InvalidEvent("version must be positive")
    return ScoreEvent(
        event_id=event_id,
        board_id=_field(data, "board_id", str),
        player_id=_field(data, "player_id", str),
        operation=_field(data, "operation", str),
        submitted_score=_field(data, "submitted_score", number),
        region=data.get("region"),
        metadata=metadata,
        version=version,
        applied=_field(data, "applied", bool),
        occurred_at_ms=_field(data, "occurred_at_ms", int),
        standings=standings,
        evictions=evictions,
    )
