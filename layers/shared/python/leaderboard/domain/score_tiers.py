"""Score tiers: named bands of a board's standings (gold, silver, bronze; top 1 %, top 10 %),
named on every standing a read returns (docs/API.md, "Score tiers").

A view over the ranks, never stored with an entry: a board may change its tiers at any time
and every read after names the new ones. Tiers are listed best first and a standing is in the
first tier it qualifies for:
  by score       a tier's `score` is "this score or better" by the board's sort (>= on a desc
                 board, <= on an asc one);
  by percentile  a standing of rank r among the N entries the read counts is in the first tier
                 with r <= max(1, ceil(N x top_percent / 100)), computed exactly on the decimal
                 the board gives; equal ranks (ties: shared) so share a tier.
Only the last tier may leave its bound out: it takes every standing the others do not. A
standing no tier takes has the tier null. (Not the `rewards` tiers of period.ended events:
those name ranges of final ranks, domain/period_events.py.)
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

from leaderboard.domain.errors import BadRequest, Unprocessable
from leaderboard.domain.validation import is_number, known_fields, require_score

SCORE = "score"
PERCENTILE = "percentile"
BY = (SCORE, PERCENTILE)
MAX_SCORE_TIERS = 16
NAME_RE = re.compile(r"^[a-z0-9_-]{1,32}$")
_BOUND = {SCORE: "score", PERCENTILE: "top_percent"}  # the key a tier's bound is given by
FIELD = "score_tiers"


@dataclass(frozen=True, slots=True)
class ScoreTier:
    name: str
    bound: int | float | None  # a score, or a top_percent; None: every standing left (last only)


@dataclass(frozen=True, slots=True)
class ScoreTiers:
    """A board's `score_tiers`: how its tiers are bounded (`by`) and the tiers, best first."""

    by: str
    tiers: tuple[ScoreTier, ...]

    def to_json(self) -> dict[str, Any]:
        key = _BOUND[self.by]
        return {
            "by": self.by,
            "tiers": [
                {"name": t.name} | ({key: t.bound} if t.bound is not None else {})
                for t in self.tiers
            ],
        }

    @classmethod
    def parse(cls, raw: Any) -> ScoreTiers:
        """The board field, checked by the rule every board field follows: what the API
        document's schema refuses (a wrong type or key, a name off its pattern, a bound out of
        its range, 0 or more than 16 tiers) is BadRequest (400); what it cannot state (a name
        used twice, a bound left out before the last tier, percentages not growing down the
        list) Unprocessable (422). How scores must run depends on the board's sort: that rule
        between fields is `check_order`'s."""
        if not isinstance(raw, Mapping):
            raise BadRequest(f"{FIELD} must be an object or null", field=FIELD)
        known_fields(raw, {"by", "tiers"}, FIELD)
        by = raw.get("by")
        if by not in BY or not isinstance(by, str):
            raise BadRequest(f"{FIELD}.by must be score or percentile", field=f"{FIELD}.by")
        listed = raw.get("tiers")
        if not isinstance(listed, list) or not 1 <= len(listed) <= MAX_SCORE_TIERS:
            raise BadRequest(
                f"{FIELD}.tiers must be a list of 1 to {MAX_SCORE_TIERS} tiers",
                field=f"{FIELD}.tiers",
            )
        tiers = tuple(_tier(item, i, by) for i, item in enumerate(listed))
        names = [t.name for t in tiers]
        for i, name in enumerate(names):
            if name in names[:i]:
                where = f"{FIELD}.tiers[{i}].name"
                raise Unprocessable(f"{where}: tier names must not repeat", field=where)
        for i, tier in enumerate(tiers[:-1]):
            if tier.bound is None:
                where = f"{FIELD}.tiers[{i}].{_BOUND[by]}"
                raise Unprocessable(
                    f"{where}: only the last tier may leave its bound out", field=where
                )
        if by == PERCENTILE:
            for i in range(1, len(tiers)):
                low, high = tiers[i - 1].bound, tiers[i].bound
                if low is not None and high is not None and not high > low:
                    where = f"{FIELD}.tiers[{i}].top_percent"
                    raise Unprocessable(
                        f"{where} must be greater than the tier's before it", field=where
                    )
        return cls(by, tiers)

    def check_order(self, sort: str) -> None:
        """Score bounds strictly better down the list by the board's sort: each tier's starts
        below the one before it on a desc board, above it on an asc one (422 if not)."""
        if self.by != SCORE:
            return
        for i in range(1, len(self.tiers)):
            before, bound = self.tiers[i - 1].bound, self.tiers[i].bound
            if before is None or bound is None:
                continue
            if not (bound < before if sort == "desc" else bound > before):
                where = f"{FIELD}.tiers[{i}].score"
                word = "lower" if sort == "desc" else "higher"
                raise Unprocessable(
                    f"{where} must be {word} than the tier's before it (tiers are listed best "
                    f"first, and the board's sort is {sort})",
                    field=where,
                )


def _tier(raw: Any, position: int, by: str) -> ScoreTier:
    where = f"{FIELD}.tiers[{position}]"
    if not isinstance(raw, Mapping):
        raise BadRequest(f"{where} must be an object", field=where)
    key = _BOUND[by]
    known_fields(raw, {"name", key}, where)
    name = raw.get("name")
    if not isinstance(name, str) or not NAME_RE.fullmatch(name):
        raise BadRequest(f"{where}.name must match ^[a-z0-9_-]{{1,32}}$", field=f"{where}.name")
    if key not in raw:
        return ScoreTier(name, None)
    value = raw[key]
    if by == SCORE:
        return ScoreTier(name, require_score(value, f"{where}.score"))
    if not is_number(value) or not math.isfinite(value) or not 0 < value <= 100:
        raise BadRequest(
            f"{where}.top_percent must be a number above 0 and at most 100",
            field=f"{where}.top_percent",
        )
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return ScoreTier(name, value)


@dataclass(frozen=True, slots=True)
class Tiering:
    """What a read needs to name each standing's tier: the board's tiers and its sort."""

    tiers: ScoreTiers
    desc: bool

    def tier(self, rank: int | None, score: int | float | None, total: int) -> str | None:
        """The tier of a standing of `rank` and `score` among `total` counted entries (None:
        no tier takes it, or no standing: a live entry that left the board)."""
        if rank is None or score is None:
            return None
        by_score = self.tiers.by == SCORE
        for tier in self.tiers.tiers:
            bound = tier.bound
            if bound is None:
                return tier.name
            if by_score:
                if (score >= bound) if self.desc else (score <= bound):
                    return tier.name
            elif rank <= cutoff(total, bound):
                return tier.name
        return None

    def to_script(self) -> str:
        """The text the board's cfg keeps for the read scripts to hand back unread (JSON in a
        JSON string: the scripts' cjson would round a score bound to 14 digits)."""
        body = self.tiers.to_json() | {"sort": "desc" if self.desc else "asc"}
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def from_script(cls, text: str | None) -> Tiering | None:
        """Back from `to_script`'s text (None or '': the board has no tiers)."""
        return _from_script(text) if text else None

    @classmethod
    def of(cls, public: Mapping[str, Any] | None, sort: str) -> Tiering | None:
        """From a board's public `score_tiers` (already checked when the board was written)
        and its sort; None when it declares none."""
        if not public:
            return None
        key = _BOUND[public["by"]]
        tiers = tuple(ScoreTier(t["name"], t.get(key)) for t in public["tiers"])
        return cls(ScoreTiers(public["by"], tiers), sort == "desc")


@lru_cache(maxsize=1024)
def _from_script(text: str) -> Tiering | None:
    """Parsed once per text: a board's reads hand the same text back on every read."""
    body = json.loads(text)
    return Tiering.of(body, body["sort"])


def cutoff(total: int, top_percent: int | float) -> int:
    """The last rank in the top `top_percent` % of `total` entries: max(1, ceil(N x p / 100)),
    exact (p as the decimal it was written as: 0.7 is seven tenths, not the nearest double)."""
    share = total * _exact(top_percent)
    return max(1, math.ceil(share / 100))


@lru_cache(maxsize=1024)
def _exact(value: int | float) -> Fraction:
    return Fraction(repr(value)) if isinstance(value, float) else Fraction(value)


def tier_field(tiering: Tiering | None, rank: int | None, score: Any, total: int) -> dict[str, Any]:
    """`{"tier": name or null}` for a standing of a board with score tiers; nothing on a board
    without, so its responses stay as they were."""
    if tiering is None:
        return {}
    return {"tier": tiering.tier(rank, score, total)}
