"""A board's rules as the scripts check them: parsed from the board's cfg key, cached per process
with the text they came from (every script call proves them current with one GET)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime

from leaderboard.domain.boards import script_calendar
from leaderboard.domain.errors import Unprocessable
from leaderboard.domain.hooks import HookConfig
from leaderboard.domain.leagues import League
from leaderboard.domain.periods import CUSTOM, Calendar, Period, Windows
from leaderboard.domain.score_tiers import Tiering
from leaderboard.domain.submissions import Submission
from leaderboard.domain.tiebreakers import (
    COLUMN_DIGITS,
    TieBreaker,
    decode,
    parse_spec,
    tie_key,
)
from leaderboard.domain.tournaments import window_rules

_OTHER_SORT = {"desc": "asc", "asc": "desc"}


@dataclass(frozen=True, slots=True)
class WriteRules:
    """The board rules the submit script needs, as cached by the caller with the cfg text they
    were read from (the script proves them current with one GET)."""

    text: str
    periods: frozenset[str]
    regions: frozenset[str]
    args: tuple[str, ...]  # ARGV 11-17 of submit.lua
    mode: str
    first: bool
    min: float | None
    max: float | None
    max_increment: float | None
    shards: int = 1
    desc: bool = True
    region_order: tuple[str, ...] = ()
    tiebreakers: tuple[TieBreaker, ...] = ()
    hook: HookConfig | None = None  # the board's validation hook (not the script's concern)
    teams: str | None = None  # the board's team aggregate ("sum", "best"), or no teams
    calendar: Calendar | None = None  # where the board's custom periods fall; None: none kept
    league: str = ""  # a league's rules as the scripts read them (League.script_rules); '' = none
    league_config: League | None = None  # the same, parsed once (a write's answer names tiers)
    tiering: Tiering | None = None  # the board's score tiers, named on every standing read
    # a tournament's rules as its cfg keeps them ('' = none): a one-shot tournament's are the
    # scripts' as they are, a recurring one's get each window's bounds (`tournament_at`)
    tournament: str = ""

    @property
    def keyed(self) -> bool:
        """Entries stored under a member other than the player id (a member map per set)."""
        return self.first or bool(self.tiebreakers)

    @property
    def group(self) -> int:
        """How many leading characters of a member equal tuples share (score key and tie key)
        on tie-breaker boards; 0 elsewhere, where equal scores are equal tuples."""
        return COLUMN_DIGITS * (1 + len(self.tiebreakers)) if self.tiebreakers else 0

    def member_tiebreakers(self, member: str) -> dict[str, int] | None:
        """The tie-breakers a tie-breaker board's member carries (None on other boards)."""
        if not self.tiebreakers:
            return None
        return self.decode(member[COLUMN_DIGITS : self.group])

    @classmethod
    def parse(cls, text: str) -> WriteRules:
        text = text.rstrip(
            " "
        )  # the space that says the board hides players (lua_shared/hidden.lua)
        cfg = json.loads(text)

        def opt(name: str) -> str:
            value = cfg.get(name)
            return "" if value is None else str(value)

        return cls(
            text=text,
            periods=frozenset(cfg["periods"]),
            regions=frozenset(cfg.get("regions") or ()),
            args=(
                cfg["mode"],
                "1" if cfg["sort"] == "desc" else "",
                "1" if cfg["ties"] == "first" else "",
                opt("min"),
                opt("max"),
                opt("rate"),
                opt("max_entries"),
            ),
            mode=cfg["mode"],
            first=cfg["ties"] == "first",
            min=cfg.get("min"),
            max=cfg.get("max"),
            max_increment=cfg.get("max_inc"),
            shards=int(cfg.get("shards", 1)),
            desc=cfg["sort"] == "desc",
            region_order=tuple(cfg.get("regions") or ()),
            tiebreakers=tuple(
                TieBreaker(name, cfg["sort"] if not flipped else _OTHER_SORT[cfg["sort"]])
                for name, flipped in (parse_spec(cfg["tb"]) if cfg.get("tb") else ())
            ),
            hook=HookConfig.from_json(cfg.get("hook")),
            teams=cfg.get("teams"),
            calendar=script_calendar(cfg),
            tournament=cfg.get("tour", ""),
            league=cfg["lg"]["rules"] if cfg.get("lg") else "",
            league_config=League.from_script(cfg["lg"]["rules"], cfg["lg"]["tiers"])
            if cfg.get("lg")
            else None,
            tiering=Tiering.from_script(cfg.get("tiers")),
        )

    def league_seasons(self, season: Period) -> str:
        """ARGV 28 of submit.lua: the season a submission goes to, the two before it ('-' for
        none) and the league's rules."""
        assert self.calendar is not None
        prev = self.calendar.previous(season)
        prev2 = self.calendar.previous(prev) if prev is not None else None
        return " ".join(
            (season.id, prev.id if prev else "-", prev2.id if prev2 else "-", self.league)
        )

    def periods_at(self, periods: dict[str, Period], now_ms: int) -> dict[str, Period]:
        """The current periods a submission goes to: the fixed kinds' as given, and the
        board's custom period as these rules place it (so a STALE answer places it again)."""
        if self.calendar is None:
            return periods
        now = datetime.fromtimestamp(now_ms / 1000, UTC)
        return {**periods, CUSTOM: self.calendar.target_at(now)}

    @property
    def recurring(self) -> bool:
        """A recurring tournament's rules: each window has its own sign-ups and attempts."""
        return isinstance(self.calendar, Windows)

    def tournament_at(self, now_ms: int) -> tuple[str, Period | None]:
        """What the submit and join scripts check at `now_ms` (ARGV 27 of submit.lua, '' = no
        tournament), and the window it is for (None: no tournament). A recurring tournament's:
        the window open then, else the next one, else the last (domain/periods.py, `Windows`),
        its bounds and id added to the cfg's rules; the script proves these rules current, so
        the window it checks is the one they place."""
        if not self.tournament or self.calendar is None:
            return "", None
        window = self.calendar.target_at(datetime.fromtimestamp(now_ms / 1000, UTC))
        if self.recurring:
            return window_rules(self.tournament, window), window
        return self.tournament, window

    def tie_key(self, submission: Submission) -> str:
        """ARGV 22 of submit.lua: the submitted tie-breakers' key ('' when the board has none,
        or they do not fit it: `precheck` says so)."""
        if not self.tiebreakers:
            return ""
        try:
            return tie_key(submission.tiebreakers, self.tiebreakers, "desc" if self.desc else "asc")
        except Unprocessable:
            return ""

    def decode(self, key: str | None) -> dict[str, int] | None:
        """The tie-breakers of a stored tie key (None on boards without)."""
        if key is None or not self.tiebreakers:
            return None
        return decode(key, self.tiebreakers, "desc" if self.desc else "asc")

    def precheck(self, submission: Submission) -> str:
        """What the script would refuse, found without Redis (answered after idempotency)."""
        if submission.region and submission.region not in self.regions:
            return "unknown_region"
        if (self.tiebreakers or submission.tiebreakers) and not self.tie_key(submission):
            return "tiebreakers"
        if submission.team_id is not None and self.teams is None:
            return "teams"
        score = submission.score
        if self.mode == "increment":
            if self.max_increment is not None and abs(score) > self.max_increment:
                return "max_increment"
        elif (self.min is not None and score < self.min) or (
            self.max is not None and score > self.max
        ):
            return "bounds"
        return ""
