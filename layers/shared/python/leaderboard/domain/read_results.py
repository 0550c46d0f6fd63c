"""What a read of a board returns, whichever store answers it (the serving index, the record, the
archive): entries with their ranks, a window of them, chosen players, a player's standing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from leaderboard.domain.score_tiers import Tiering


@dataclass(frozen=True, slots=True)
class Entry:
    rank: int
    player_id: str
    score: int | float
    metadata: dict[str, Any] | None
    tiebreakers: dict[str, int] | None = None  # boards with tie-breakers only
    # The reader's own entry, shown to them although the board hides them (others never see it)
    hidden: bool = False

    def to_json(self) -> dict[str, Any]:
        body = {
            "rank": self.rank,
            "player_id": self.player_id,
            "score": self.score,
            "metadata": self.metadata,
        }
        if self.tiebreakers is not None:
            body["tiebreakers"] = self.tiebreakers
        return body


@dataclass(frozen=True, slots=True)
class Window:
    total: int
    start: int
    player_position: int | None
    entries: tuple[Entry, ...]
    tiering: Tiering | None = None  # the board's score tiers, as the store that read it had them


@dataclass(frozen=True, slots=True)
class Selection:
    """Chosen players of one board (period, region), in board order, ranked on the whole board."""

    total: int
    entries: tuple[Entry, ...]
    tiering: Tiering | None = None  # as in Window


@dataclass(frozen=True, slots=True)
class PeriodStanding:
    """A player's place on one period (and region) of a board."""

    kind: str
    period: str
    region: str | None
    rank: int
    score: int | float
    total: int
    tiebreakers: dict[str, int] | None = None
    hidden: bool = False  # the hidden reader's own standing (see Entry.hidden)
    tiering: Tiering | None = None  # the board's score tiers (as in Window)
