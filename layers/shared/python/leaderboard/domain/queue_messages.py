"""Score events read back off the queue: the strict decoder the persister runs on every message.

msgspec decodes and type-checks a message in one pass in C, several times faster than
json.loads followed by checks in Python; the persister parses every message of every batch,
so this is its hot path. A message is held to exact JSON types (no bool for a number, no
NaN), and anything else raises InvalidEvent: a poison record that fails alone and, after the
redrive limit, lands in the dead-letter queue. Unknown fields are ignored, so a newer writer
can add one without stopping an older persister.

The decoded event has the shape leaderboard.domain.folding reads, like the ScoreEvent the
write path sends.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

# The canonical text form the write path produces; PostgreSQL stores it as a uuid.
_UUID = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"


class InvalidEvent(ValueError):
    """A queue message that is not a score event this version understands (a poison record)."""


# gc=False: decoded messages hold no reference cycles, so the collector need not track them.
class ReceivedStanding(msgspec.Struct, frozen=True, gc=False):
    period: str
    region: str | None
    score: int | float
    present: bool
    changed: bool
    tie_key: str | None = None  # tie-breaker boards only
    team_contribution: int | float | None = None  # team boards only (of the event's team_id)


class ReceivedEviction(msgspec.Struct, frozen=True, gc=False):
    period: str
    region: str | None
    player_id: str
    gone: bool


class ReceivedEvent(msgspec.Struct, frozen=True, gc=False):
    schema: Literal[1]
    type: Literal["score_submitted"]
    event_id: Annotated[str, msgspec.Meta(pattern=_UUID)]
    board_id: str
    player_id: str
    operation: str
    submitted_score: int | float
    region: str | None
    metadata: dict[str, Any] | None
    version: Annotated[int, msgspec.Meta(ge=1)]
    applied: bool
    occurred_at_ms: int
    standings: list[ReceivedStanding] = msgspec.field(name="scores")
    evictions: list[ReceivedEviction] = msgspec.field(default_factory=list, name="evicted")
    arrival: int | None = None
    # The board's validation hook on it (leaderboard/domain/hooks.py); None: no hook.
    hook_verdict: Literal["accept", "flag", "failed_open"] | None = None
    hook_reason: str | None = None
    team_id: str | None = None  # team boards: the team the contributions went to

    def to_message(self) -> str:
        return msgspec.json.encode(self).decode()


_decoder = msgspec.json.Decoder(ReceivedEvent)


def parse_event(body: str | bytes) -> ReceivedEvent:
    """Decode and check a queue message; anything malformed raises InvalidEvent."""
    try:
        return _decoder.decode(body)
    except msgspec.DecodeError as exc:  # ValidationError is a DecodeError
        raise InvalidEvent(str(exc)) from None
