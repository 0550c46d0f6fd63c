"""The shapes of the API's JSON (docs/API.md, docs/openapi.json), as TypedDicts.

Responses are returned as parsed JSON, not copied into objects: these types describe them for
the type checker and the editor. Fields the API adds later are present at run time even where
these types do not name them yet."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

Score = int | float
Metadata = dict[str, str | int | float | bool]
PeriodKind = Literal["all-time", "daily", "weekly", "monthly", "custom"]


# Boards ----------------------------------------------------------------------------------


class TieBreakerColumn(TypedDict):
    name: str
    sort: NotRequired[Literal["asc", "desc"]]


class ValidationHook(TypedDict):
    target: str
    timeout_ms: NotRequired[int]
    on_failure: NotRequired[Literal["closed", "open"]]


class Schedule(TypedDict):
    cron: NotRequired[str | None]
    timezone: NotRequired[str]


class RewardTier(TypedDict):
    name: str
    ranks: NotRequired[list[int]]
    top_percent: NotRequired[float]


class Rewards(TypedDict):
    top: NotRequired[int]
    tiers: NotRequired[list[RewardTier]]


class ScoreTier(TypedDict):
    """One of a board's score tiers, best first: `score` on a `by: score` board (that score or
    better), `top_percent` on a `by: percentile` one; the last tier may have neither."""

    name: str
    score: NotRequired[Score]
    top_percent: NotRequired[float]


class ScoreTiers(TypedDict):
    """A board's `score_tiers` (docs/API.md, "Score tiers"): every read names each standing's
    `tier` by them. Not the reward tiers of `rewards`."""

    by: Literal["score", "percentile"]
    tiers: list[ScoreTier]


class League(TypedDict):
    """A board's league (docs/API.md, "Leagues"): tiers lowest first, groups of `group_size`,
    and how many of each group go up and down a tier when a season ends (`promote` or
    `promote_percent`, `relegate` or `relegate_percent`: one of each)."""

    tiers: list[str]
    group_size: int
    promote: NotRequired[int]
    promote_percent: NotRequired[float]
    relegate: NotRequired[int]
    relegate_percent: NotRequired[float]
    inactive: NotRequired[Literal["stay", "drop"]]
    start_tier: NotRequired[str]


LeagueZone = Literal["promotion", "relegation", "safe"]
"""Where a rank in a league group lies if the season ended now."""


class Recurrence(TypedDict):
    """A recurring tournament's windows: one at each fire of `cron` in `timezone`, each
    `duration_seconds` long (or until the next fire)."""

    cron: str
    timezone: NotRequired[str]
    duration_seconds: int


class Tournament(TypedDict):
    """One window (`starts_at`..`ends_at`, both required), or with a `recurrence` a series of
    windows whose optional bounds they are (null: from the board's creation, forever)."""

    starts_at: NotRequired[str | None]
    ends_at: NotRequired[str | None]
    join_required: NotRequired[bool]
    max_participants: NotRequired[int | None]
    max_attempts: NotRequired[int | None]
    recurrence: NotRequired[Recurrence | None]


class BoardSettings(TypedDict, total=False):
    """A `PUT /boards/{board_id}` body: any of these; left out keeps, null clears."""

    board_id: str
    title: str | None
    sort: Literal["desc", "asc"]
    mode: Literal["increment", "best", "set"]
    periods: list[PeriodKind]
    ties: Literal["shared", "first"]
    max_entries: int | None
    min_score: Score | None
    max_score: Score | None
    max_increment: Score | None
    regions: list[str] | None
    rate_limit_per_minute: int | None
    live_top: int
    shards: int
    tiebreakers: list[TieBreakerColumn]
    validation_hook: ValidationHook | None
    teams: Literal["sum", "best"] | None
    schedule: Schedule | None
    rewards: Rewards | None
    tournament: Tournament | None
    league: League | None
    score_tiers: ScoreTiers | None


class Board(TypedDict):
    board_id: str
    title: str | None
    sort: Literal["desc", "asc"]
    mode: Literal["increment", "best", "set"]
    periods: list[PeriodKind]
    ties: Literal["shared", "first"]
    max_entries: int | None
    min_score: Score | None
    max_score: Score | None
    max_increment: Score | None
    regions: list[str] | None
    rate_limit_per_minute: int | None
    live_top: int
    shards: int
    tiebreakers: list[TieBreakerColumn]
    validation_hook: ValidationHook | None
    teams: Literal["sum", "best"] | None
    schedule: Schedule | None
    ended_by_hand: list[str]
    rewards: Rewards | None
    tournament: Tournament | None
    league: League | None
    """The board's league; None: not a league."""
    score_tiers: ScoreTiers | None
    live_channel: str
    created_at: str
    updated_at: str


class BoardList(TypedDict):
    boards: list[Board]


# Submissions -----------------------------------------------------------------------------


class Standing(TypedDict):
    period: str
    region: str | None
    score: Score
    rank: int | None
    previous_score: Score | None
    previous_rank: int | None


class LeaguePlace(TypedDict):
    """A submission's league group (league boards only). A write ranks no group: the rank,
    zone and lines are get_league_player's."""

    season: str
    tier: str
    group_id: str
    placed: bool
    """True on the write that placed the player (their first accepted write of the season)."""


class ScoreResult(TypedDict):
    """What the service answers for a submission (alone, or as a batch item's `result`)."""

    board_id: str
    player_id: str
    event_id: str
    applied: bool
    version: int
    standings: list[Standing]
    league: NotRequired[LeaguePlace]
    """On a league board only: the player's group (its standings are get_league_player's)."""


class SubmitResult(ScoreResult):
    """`submit_score`'s result: the answer, and what the client adds to it."""

    replayed: bool
    """True when the service replayed the first answer to this idempotency key (header
    `Idempotent-Replayed: true`): the submission counted once, earlier."""
    idempotency_key: str
    """The `Idempotency-Key` it was sent with (given, or made by the client): send it again
    with the same submission to retry it safely."""


class BatchItem(TypedDict):
    """One item of `POST .../scores/batch`; the client adds an `idempotency_key` if missing."""

    player_id: str
    score: Score
    region: NotRequired[str | None]
    metadata: NotRequired[Metadata | None]
    tiebreakers: NotRequired[dict[str, int]]
    team_id: NotRequired[str]
    idempotency_key: NotRequired[str]


class ErrorBody(TypedDict):
    message: str
    code: NotRequired[str]
    field: NotRequired[str]
    fields: NotRequired[list[str]]
    retry_after: NotRequired[int]
    reason: NotRequired[str]


class BatchItemResult(TypedDict):
    status: int
    replayed: NotRequired[bool]
    result: NotRequired[ScoreResult]
    error: NotRequired[ErrorBody]


class BatchResult(TypedDict):
    board_id: str
    results: list[BatchItemResult]


# Reads -----------------------------------------------------------------------------------


class Entry(TypedDict):
    rank: int
    player_id: str
    score: Score
    metadata: Metadata | None
    tiebreakers: NotRequired[dict[str, int]]
    tier: NotRequired[str | None]
    """On a board with `score_tiers` only: the standing's tier (None: no tier takes it)."""
    hidden: NotRequired[bool]


class EntriesPage(TypedDict):
    board_id: str
    period: str
    region: str | None
    total: int
    entries: list[Entry]
    by: NotRequired[str]
    team_id: NotRequired[str]
    degraded: NotRequired[bool]


class PlayerStanding(TypedDict):
    board_id: str
    period: str
    region: str | None
    player_id: str
    rank: int
    score: Score
    total: int
    top_percent: float
    metadata: Metadata | None
    tier: NotRequired[str | None]
    hidden: NotRequired[bool]
    degraded: NotRequired[bool]


class AroundWindow(TypedDict):
    board_id: str
    period: str
    region: str | None
    total: int
    player: Entry
    entries: list[Entry]
    degraded: NotRequired[bool]


class PlayersSelection(TypedDict):
    board_id: str
    period: str
    region: str | None
    total: int
    entries: list[Entry]
    missing: list[str]
    degraded: NotRequired[bool]


class PeriodStanding(TypedDict):
    period: str
    kind: PeriodKind
    region: str | None
    rank: int
    score: Score
    total: int
    top_percent: float
    tier: NotRequired[str | None]
    hidden: NotRequired[bool]


class PlayerStandings(TypedDict):
    board_id: str
    player_id: str
    standings: list[PeriodStanding]
    degraded: NotRequired[bool]


class HistoryResult(TypedDict):
    period: str
    rank: int
    score: Score
    total: int
    top_percent: float
    tier: NotRequired[str | None]
    hidden: NotRequired[bool]


class PlayerHistory(TypedDict):
    board_id: str
    player_id: str
    kind: PeriodKind
    region: str | None
    results: list[HistoryResult]
    next: str | None


# Periods and tournaments -----------------------------------------------------------------


class PeriodInfo(TypedDict):
    period: str
    kind: PeriodKind
    starts_at: str | None
    ends_at: str | None
    status: Literal["open", "closed", "archived"]
    entries: NotRequired[int]


class PeriodBounds(TypedDict):
    """A period's bounds and status (a league's `season`)."""

    period: str
    kind: PeriodKind
    starts_at: str | None
    ends_at: str | None
    status: Literal["open", "closed"]


class PeriodList(TypedDict):
    board_id: str
    periods: list[PeriodInfo]


class PeriodEnded(TypedDict):
    board_id: str
    ended: PeriodInfo
    current: PeriodInfo


class JoinResult(TypedDict):
    board_id: str
    player_id: str
    period: str  # the window signed up for (a recurring tournament's: open now, else next)
    joined: bool
    participants: int  # in that window


class TournamentInfo(TypedDict):
    board_id: str
    title: str | None
    status: Literal["open", "upcoming", "ended"]
    period: str
    starts_at: str
    ends_at: str
    join_required: bool
    max_participants: int | None
    max_attempts: int | None
    recurrence: Recurrence | None
    series_starts_at: str
    series_ends_at: str | None
    participants: int | None
    """The shown window's players (signed up, or who played); None while Redis can't be read."""
    attempts: int | None
    """The shown window's accepted submissions; None without max_attempts."""


class TournamentList(TypedDict):
    tournaments: list[TournamentInfo]


# Leagues ---------------------------------------------------------------------------------


class LeagueTierCount(TypedDict):
    tier: str
    groups: int
    players: int
    """Placed this season (hidden and removed players too: a place once taken stays taken)."""


class LeagueTiers(TypedDict):
    """`GET /boards/{board_id}/league`: the rules and each tier's groups (lowest first)."""

    board_id: str
    season: PeriodBounds
    league: League
    tiers: list[LeagueTierCount]


class LeagueEntry(Entry):
    """An entry of a league group: its rank within the group, and its zone."""

    zone: LeagueZone


class LeagueGroup(TypedDict):
    """`GET /boards/{board_id}/league/groups/{group_id}`: a group's standings and its lines."""

    board_id: str
    season: str
    tier: str
    group_id: str | None
    players: int
    """Visible players (a hidden reader's own entry is shown to them, not counted)."""
    promotion_line: int | None
    """The last rank promoted: ranks 1..promotion_line go up (None: the top tier, or none)."""
    relegation_line: int | None
    """The first rank relegated: ranks from it on go down (None: the lowest tier, or none)."""
    entries: list[LeagueEntry]
    """The whole group, best first."""


class LeaguePlayer(LeagueGroup):
    """`GET /boards/{board_id}/league/players/{player_id}`: the player's own group. A player in
    no group this season has `group_id`, `rank` and `zone` None, no entries, and `tier`: the
    tier they would start the season in."""

    player_id: str
    rank: int | None
    zone: LeagueZone | None


# Admin -----------------------------------------------------------------------------------


class RebuildReport(TypedDict):
    board_id: str
    entries: int
    sorted_sets: int
    players: int
    version: int
    seconds: float


class FlaggedSubmission(TypedDict):
    event_id: str
    player_id: str
    score: Score
    region: str | None
    metadata: Metadata | None
    operation: str
    applied: bool
    version: int
    occurred_at: str
    hook_verdict: str
    hook_reason: str | None


class FlagsPage(TypedDict):
    board_id: str
    verdict: str
    player_id: str | None
    flags: list[FlaggedSubmission]
    next: str | None


class HiddenPlayerResult(TypedDict):
    board_id: str
    player_id: str
    hidden: bool
    hidden_at: str
    reason: str | None


class HiddenPlayer(TypedDict):
    player_id: str
    hidden_at: str
    reason: str | None


class HiddenPlayersPage(TypedDict):
    board_id: str
    players: list[HiddenPlayer]
    next: str | None


class HealthCheck(TypedDict):
    status: Literal["ok", "unreachable"]
    latency_ms: float
    error: NotRequired[str]


class Health(TypedDict):
    status: Literal["ok", "degraded"]
    unreachable: list[str]
    checks: dict[str, HealthCheck]


# Player channels -------------------------------------------------------------------------


class Watch(TypedDict):
    board_id: str
    player_id: str
    period_kind: PeriodKind
    period: str
    region: str | None
    top_n: int
    friends: list[str]
    channel: str
    expires_at: str
    rank: int | None
    score: Score | None


# Live messages ---------------------------------------------------------------------------


class ChangedEntry(TypedDict):
    rank: int | None
    player_id: str
    score: Score | None
    metadata: Metadata | None
    previous_rank: int | None
    removed: NotRequired[bool]
    tiebreakers: NotRequired[dict[str, int]]
    tier: NotRequired[str | None]


class BoardMessage(TypedDict):
    """A `leaderboard.changed` message of a board channel."""

    type: Literal["leaderboard.changed"]
    board_id: str
    period_kind: PeriodKind
    period: str
    region: str | None
    version: int
    previous_version: int | None
    total: int
    top: list[Entry]
    changed: list[ChangedEntry]
    changed_truncated: bool
    truncated: bool
    published_at: str


class PassedBy(TypedDict):
    player_id: str
    rank: int
    score: Score
    metadata: Metadata | None
    friend: bool
    tier: NotRequired[str | None]


class PlayerMessage(TypedDict):
    """A `player.standing_changed` message of a player channel."""

    type: Literal["player.standing_changed"]
    player_id: str
    board_id: str
    period_kind: PeriodKind
    period: str
    region: str | None
    version: int
    rank: int | None
    previous_rank: int | None
    score: Score | None
    tier: NotRequired[str | None]
    top_n: int
    events: list[Literal["passed", "friend_passed", "entered_top", "left_top"]]
    passed_by: list[PassedBy]
    passed_by_truncated: bool
    published_at: str
