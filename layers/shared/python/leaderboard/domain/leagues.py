"""Leagues: a season board whose players compete in groups of N within tiers, with promotion
and relegation at every season's end (docs/API.md, "Leagues").

A player's first accepted write of a season places them, in the same script, in the open group
of their tier (first come first served): groups fill to `group_size` and never past it. At the
season's end each group's final standings decide its players' moves: the top `promote` ranks go
up a tier, the bottom `relegate` ranks down one (a tie at a line favours the players on it), and
a player of the league who did not play the season stays, or drops a tier (`inactive`). The
next season's groups form from the new tiers as its players arrive.

Pure domain code: the rule here is the one the scripts apply (lua_shared/league.lua) and the
reference the tests hold them to.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.domain.errors import BadRequest, Unprocessable
from leaderboard.domain.validation import known_fields

MAX_TIERS = 20
MIN_GROUP, MAX_GROUP = 2, 1000
TIER_NAME = re.compile(r"[a-z0-9_]{1,32}")
INACTIVE_RULES = ("stay", "drop")
# A player's move at a season's end (period.ended, `league.moves`).
PROMOTED, RELEGATED, STAYED = "promoted", "relegated", "stayed"
# Where a standing lies in its group now (reads): above the promotion line, below the
# relegation line, or between.
PROMOTION, RELEGATION, SAFE = "promotion", "relegation", "safe"
GROUP_ID = re.compile(r"([a-z0-9_]{1,32})-([1-9][0-9]{0,8})")


def _count(value: Any, name: str) -> int:
    """A count of ranks, its shape (400: 0 to MAX_GROUP); no more than the group holds is a
    rule between two fields (422, checked once every shape is)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_GROUP:
        raise BadRequest(
            f"league.{name} must be an integer from 0 to {MAX_GROUP}", field=f"league.{name}"
        )
    return value


def _percent(value: Any, name: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= 100
    ):
        raise BadRequest(f"league.{name} must be a number from 0 to 100", field=f"league.{name}")
    return float(value)


@dataclass(frozen=True, slots=True)
class League:
    """A board's league: tiers lowest first, the group size, and the season-end rule."""

    tiers: tuple[str, ...]
    group_size: int
    promote: int | None = None  # ranks promoted per group; or promote_percent
    relegate: int | None = None
    promote_percent: float | None = None
    relegate_percent: float | None = None
    inactive: str = "stay"
    start_tier: int = 0  # index into tiers: where a new player starts

    @classmethod
    def parse(cls, value: object) -> League:
        """Shape first (BadRequest, 400), then what the schema cannot state (422): a tier name
        used twice, a start tier that is not one of the tiers."""
        if not isinstance(value, dict):
            raise BadRequest(
                'league must be an object like {"tiers": ["bronze", "silver", "gold"], '
                '"group_size": 30, "promote": 5, "relegate": 5}',
                field="league",
            )
        known_fields(
            value,
            {
                "tiers",
                "group_size",
                "promote",
                "relegate",
                "promote_percent",
                "relegate_percent",
                "inactive",
                "start_tier",
            },
            "league",
        )
        tiers = value.get("tiers")
        if not isinstance(tiers, list) or not 2 <= len(tiers) <= MAX_TIERS:
            raise BadRequest(
                f"league.tiers must be a list of 2 to {MAX_TIERS} tier names, lowest first",
                field="league.tiers",
            )
        for n, name in enumerate(tiers):
            if not isinstance(name, str) or not TIER_NAME.fullmatch(name):
                raise BadRequest(
                    f"league.tiers[{n}] must be 1-32 lowercase letters, digits or _",
                    field=f"league.tiers[{n}]",
                )
        if "group_size" not in value:
            raise BadRequest("league.group_size is required", field="league.group_size")
        size = value["group_size"]
        if isinstance(size, float) and size.is_integer():
            size = int(size)
        if (
            isinstance(size, bool)
            or not isinstance(size, int)
            or not MIN_GROUP <= size <= MAX_GROUP
        ):
            raise BadRequest(
                f"league.group_size must be an integer from {MIN_GROUP} to {MAX_GROUP}",
                field="league.group_size",
            )
        lines: dict[str, Any] = {}
        for side in ("promote", "relegate"):
            count, share = side in value, f"{side}_percent" in value
            if count and share:
                raise BadRequest(
                    f"league: give {side} or {side}_percent, not both", field=f"league.{side}"
                )
            if count:
                lines[side] = _count(value[side], side)
            elif share:
                lines[f"{side}_percent"] = _percent(value[f"{side}_percent"], f"{side}_percent")
            else:
                raise BadRequest(
                    f"league.{side} (or {side}_percent) is required", field=f"league.{side}"
                )
        inactive = value.get("inactive", "stay")
        if inactive not in INACTIVE_RULES:
            raise BadRequest("league.inactive must be stay or drop", field="league.inactive")
        start = value.get("start_tier", tiers[0])
        if not isinstance(start, str):
            raise BadRequest("league.start_tier must be a tier name", field="league.start_tier")
        if len(set(tiers)) != len(tiers):
            raise Unprocessable("league.tiers must not repeat", field="league.tiers")
        for side in ("promote", "relegate"):
            if lines.get(side, 0) > size:
                raise Unprocessable(
                    f"league.{side} must not be more than league.group_size ({size})",
                    field=f"league.{side}",
                )
        if start not in tiers:
            raise Unprocessable(
                f"league.start_tier {start!r} is not one of league.tiers", field="league.start_tier"
            )
        return cls(tuple(tiers), size, inactive=inactive, start_tier=tiers.index(start), **lines)

    def check_board(
        self, *, seasons: bool, shards: int, teams: str | None, max_entries: int | None
    ) -> None:
        """A league plays in seasons (custom periods and a schedule), on one node (a group's
        placement is one script), ranks players, and keeps every entry (a group must not lose a
        player to max_entries): Unprocessable otherwise."""
        if not seasons:
            raise Unprocessable(
                "a league plays in seasons: add `custom` to periods and a schedule",
                field="league",
            )
        for name, value, why in (
            ("shards", shards > 1, "a player's group is placed in one script: use shards 1"),
            ("teams", teams is not None, "leagues rank players, not teams: no teams"),
            ("max_entries", max_entries is not None, "a group keeps every player"),
        ):
            if value:
                raise Unprocessable(f"a league board cannot have {name}: {why}", field="league")

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"tiers": list(self.tiers), "group_size": self.group_size}
        for side in ("promote", "relegate"):
            count = getattr(self, side)
            if count is not None:
                body[side] = count
            else:
                body[f"{side}_percent"] = getattr(self, f"{side}_percent")
        body["inactive"] = self.inactive
        body["start_tier"] = self.tiers[self.start_tier]
        return body

    def script_rules(self) -> str:
        """What the scripts read (lua_shared/league.lua): "size start top promote relegate
        promote% relegate% drop" ('' for the side given the other way)."""

        def text(x: float | int | None) -> str:
            return "" if x is None else repr(x) if isinstance(x, float) else str(x)

        return " ".join(
            (
                str(self.group_size),
                str(self.start_tier),
                str(len(self.tiers) - 1),
                text(self.promote),
                text(self.relegate),
                text(self.promote_percent),
                text(self.relegate_percent),
                "1" if self.inactive == "drop" else "0",
            )
        )

    @classmethod
    def from_script(cls, rules: str, tiers: Sequence[str]) -> League:
        """The league from the compact form the scripts read (script_rules, and the names)."""
        size, start, _, promote, relegate, promote_pct, relegate_pct, drop = rules.split(" ")
        return cls(
            tuple(tiers),
            int(size),
            int(promote) if promote else None,
            int(relegate) if relegate else None,
            float(promote_pct) if promote_pct else None,
            float(relegate_pct) if relegate_pct else None,
            "drop" if drop == "1" else "stay",
            int(start),
        )

    def placement(self, season: str, group: str) -> dict[str, Any]:
        """A write's answer on a league board: the player's group (`group` as the scripts name
        it), without its standings (a read's: a write ranks no group)."""
        tier, number = script_group(group)
        return {"season": season, "tier": self.tiers[tier], "group_id": self.group_id(tier, number)}

    def standing(self, season: str, group: str, rank: int | None, members: int) -> dict[str, Any]:
        """A player's place in their group as the API shows it (`group` as the scripts name
        it; rank None: the player is hidden)."""
        tier, number = script_group(group)
        return {
            "season": season,
            "tier": self.tiers[tier],
            "group_id": self.group_id(tier, number),
            "rank": rank,
            "players": members,
            "zone": self.zone(tier, rank, members) if rank is not None else None,
            "promotion_line": self.promotion_line(tier, members),
            "relegation_line": self.relegation_line(tier, members),
        }

    # --- the season-end rule -----------------------------------------------------------------

    def lines(self, members: int) -> tuple[int, int]:
        """(promoted ranks, relegated ranks) of a group of `members` ranked players: a share
        rounds down."""
        promote = (
            self.promote
            if self.promote is not None
            else math.floor(members * (self.promote_percent or 0) / 100)
        )
        relegate = (
            self.relegate
            if self.relegate is not None
            else math.floor(members * (self.relegate_percent or 0) / 100)
        )
        return promote, relegate

    def zone(self, tier: int, rank: int, members: int) -> str:
        """Where rank `rank` of a group of `members` in tier `tier` lies: promoted when the
        season ended now, relegated, or neither."""
        promote, relegate = self.lines(members)
        if tier < len(self.tiers) - 1 and rank <= promote:
            return PROMOTION
        if tier > 0 and rank > members - relegate:
            return RELEGATION
        return SAFE

    def moved(self, tier: int, rank: int, members: int) -> int:
        """The tier after the season of a player ranked `rank` of `members` in tier `tier`."""
        zone = self.zone(tier, rank, members)
        return tier + 1 if zone == PROMOTION else tier - 1 if zone == RELEGATION else tier

    def idle(self, tier: int) -> int:
        """The tier after a season the player did not play."""
        return max(0, tier - 1) if self.inactive == "drop" else tier

    def promotion_line(self, tier: int, members: int) -> int | None:
        """The last rank promoted: ranks 1..it go up (None: the top tier, or no rank does)."""
        if tier >= len(self.tiers) - 1:
            return None
        return min(self.lines(members)[0], members) or None

    def relegation_line(self, tier: int, members: int) -> int | None:
        """The first rank relegated: ranks from it on go down, below the promoted ones (None:
        the lowest tier, or no rank does)."""
        relegate = self.lines(members)[1]
        if tier == 0 or relegate <= 0:
            return None
        first = max(members - relegate + 1, (self.promotion_line(tier, members) or 0) + 1)
        return first if first <= members else None

    # --- group ids ----------------------------------------------------------------------------

    def group_id(self, tier: int, number: int) -> str:
        """The API's id of group `number` (from 1) of tier `tier`: `gold-3`."""
        return f"{self.tiers[tier]}-{number}"

    def parse_group_id(self, text: str) -> tuple[int, int]:
        """(tier index, number) of a group id; BadRequest when malformed, Unprocessable for a
        tier the league does not have."""
        match = GROUP_ID.fullmatch(text)
        if not match:
            raise BadRequest(
                "group_id must be a tier name, a dash and a group number, like gold-3",
                field="group_id",
            )
        if match[1] not in self.tiers:
            raise Unprocessable(f"the league has no tier {match[1]!r}", field="group_id")
        return self.tiers.index(match[1]), int(match[2])


def script_group(text: str) -> tuple[int, int]:
    """A group as the scripts name it, "tier.number" (tier an index from 0)."""
    tier, _, number = text.partition(".")
    return int(tier), int(number)


@dataclass(frozen=True, slots=True)
class Move:
    """One player's season end: from which tier to which, and where they finished (None: did
    not play the season)."""

    player_id: str
    old_tier: int
    new_tier: int
    group: tuple[int, int] | None = None
    rank: int | None = None

    @property
    def kind(self) -> str:
        if self.new_tier > self.old_tier:
            return PROMOTED
        return RELEGATED if self.new_tier < self.old_tier else STAYED

    def to_json(self, league: League) -> dict[str, Any]:
        return {
            "player_id": self.player_id,
            "move": self.kind,
            "from_tier": league.tiers[self.old_tier],
            "to_tier": league.tiers[self.new_tier],
            "group_id": league.group_id(*self.group) if self.group else None,
            "rank": self.rank,
            "played": self.group is not None,
        }


def group_ranks(scores: Sequence[Any]) -> list[int]:
    """Shared ranks of an ordered group (equal keys share the better rank)."""
    ranks: list[int] = []
    for n, key in enumerate(scores):
        ranks.append(ranks[-1] if n and key == scores[n - 1] else n + 1)
    return ranks


def season_moves(
    league: League,
    groups: Mapping[tuple[int, int], Sequence[tuple[str, int]]],
    tiers_before: Mapping[str, int],
    placed_hidden: Mapping[str, tuple[int, int]] | None = None,
) -> dict[str, Move]:
    """Every league player's move at a season's end (the reference the rollover's script is
    tested against): `groups` are each group's visible players in order with their ranks;
    `tiers_before` the tier each player of the league held before the season; a hidden
    player placed in a group keeps their tier."""
    moves: dict[str, Move] = {}
    for (tier, number), ranked in groups.items():
        members = len(ranked)
        for player, rank in ranked:
            moves[player] = Move(
                player, tier, league.moved(tier, rank, members), (tier, number), rank
            )
    for player, group in (placed_hidden or {}).items():
        moves[player] = Move(player, group[0], group[0], group, None)
    for player, tier in tiers_before.items():
        if player not in moves:
            moves[player] = Move(player, tier, league.idle(tier))
    return moves
