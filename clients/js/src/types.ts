/**
 * The shapes of the API's requests and answers (docs/API.md, docs/openapi.json). Fields the
 * service may add later are let through (`[key: string]: unknown` where the contract says the
 * object may grow).
 */

export type Sort = "asc" | "desc";
export type Mode = "increment" | "best" | "set";
export type PeriodKind = "all-time" | "daily" | "weekly" | "monthly" | "custom";
export type Metadata = Record<string, string | number | boolean>;
export type TieBreakers = Record<string, number>;

export interface TieBreakerColumn {
  name: string;
  sort?: Sort;
}

export interface ValidationHook {
  target: string;
  timeout_ms?: number;
  on_failure?: "closed" | "open";
}

export interface Schedule {
  cron?: string | null;
  timezone?: string;
}

export interface Rewards {
  top?: number;
  tiers?: Array<{ name: string; ranks?: [number, number]; top_percent?: number }>;
}

/**
 * A board's score tiers (docs/API.md, "Score tiers"), best first: every read names each
 * standing's `tier` by them. `score` on a `by: "score"` board (that score or better by the
 * board's sort), `top_percent` on a `by: "percentile"` one; the last tier may have neither.
 * Not the reward tiers of `rewards`.
 */
export interface ScoreTiers {
  by: "score" | "percentile";
  tiers: Array<{ name: string; score?: number; top_percent?: number }>;
}

/** On a board with `score_tiers` only: a standing's tier (null: no tier takes it). */
export type Tier = string | null;

/**
 * A board's league (docs/API.md, "Leagues"): tiers lowest first, groups of `group_size`, and
 * how many of each group go up and down a tier when a season ends: `promote` or
 * `promote_percent`, `relegate` or `relegate_percent` (one of each). The board object shows
 * every rule (`inactive` and `start_tier` included).
 */
export interface League {
  tiers: string[];
  group_size: number;
  promote?: number;
  promote_percent?: number;
  relegate?: number;
  relegate_percent?: number;
  inactive?: "stay" | "drop";
  start_tier?: string;
}

/** Where a rank in a league group lies if the season ended now. */
export type LeagueZone = "promotion" | "relegation" | "safe";

/** A recurring tournament's windows: one at each fire of `cron` in `timezone`, each
 * `duration_seconds` long (or until the next fire). */
export interface Recurrence {
  cron: string;
  timezone?: string;
  duration_seconds: number;
}

/** One window (`starts_at`..`ends_at`, both required), or with a `recurrence` a series of
 * windows whose optional bounds they are (null: from the board's creation, forever). */
export interface TournamentRules {
  starts_at?: string | null;
  ends_at?: string | null;
  join_required?: boolean;
  max_participants?: number | null;
  max_attempts?: number | null;
  recurrence?: Recurrence | null;
}

/** The body of `PUT /boards/{board_id}`: any of the board's writable fields. */
export interface BoardRequest {
  board_id?: string;
  title?: string | null;
  sort?: Sort;
  mode?: Mode;
  periods?: PeriodKind[];
  ties?: "shared" | "first";
  max_entries?: number | null;
  min_score?: number | null;
  max_score?: number | null;
  max_increment?: number | null;
  regions?: string[] | null;
  rate_limit_per_minute?: number | null;
  live_top?: number;
  shards?: number;
  tiebreakers?: TieBreakerColumn[];
  validation_hook?: ValidationHook | null;
  teams?: "sum" | "best" | null;
  schedule?: Schedule | null;
  rewards?: Rewards | null;
  tournament?: TournamentRules | null;
  league?: League | null;
  score_tiers?: ScoreTiers | null;
}

export interface Board {
  board_id: string;
  title: string | null;
  sort: Sort;
  mode: Mode;
  periods: PeriodKind[];
  ties: "shared" | "first";
  max_entries: number | null;
  min_score: number | null;
  max_score: number | null;
  max_increment: number | null;
  regions: string[] | null;
  rate_limit_per_minute: number | null;
  live_top: number;
  shards: number;
  tiebreakers: TieBreakerColumn[];
  validation_hook: ValidationHook | null;
  teams: "sum" | "best" | null;
  schedule: Schedule | null;
  ended_by_hand: string[];
  rewards: Rewards | null;
  tournament: TournamentRules | null;
  /** The board's league; null: not a league. */
  league: League | null;
  score_tiers: ScoreTiers | null;
  /** The prefix of the board's live channels: `/leaderboards/<board segment>`. */
  live_channel: string;
  created_at: string;
  updated_at: string;
  [key: string]: unknown;
}

/** `putBoard`'s answer: the board, and whether this call created it (201) or updated it (200). */
export interface PutBoardResult {
  board: Board;
  created: boolean;
}

export interface Entry {
  rank: number | null;
  player_id: string;
  score: number;
  metadata: Metadata | null;
  tiebreakers?: TieBreakers;
  tier?: Tier;
  hidden?: boolean;
  [key: string]: unknown;
}

export interface TeamEntry {
  rank: number;
  team_id: string;
  score: number;
  tier?: Tier;
}

export interface EntriesPage {
  board_id: string;
  period: string;
  region: string | null;
  total: number;
  entries: Entry[];
  by?: "team";
  team_id?: string;
  degraded?: boolean;
  [key: string]: unknown;
}

export interface PlayerStanding {
  board_id: string;
  period: string;
  region: string | null;
  player_id: string;
  rank: number;
  score: number;
  total: number;
  top_percent: number;
  metadata: Metadata | null;
  tier?: Tier;
  [key: string]: unknown;
}

export interface AroundWindow {
  board_id: string;
  period: string;
  region: string | null;
  total: number;
  player: Entry;
  entries: Entry[];
  [key: string]: unknown;
}

export interface PlayersSelection {
  board_id: string;
  period: string;
  region: string | null;
  total: number;
  entries: Entry[];
  missing: string[];
  [key: string]: unknown;
}

export interface PlayerStandings {
  board_id: string;
  player_id: string;
  standings: Array<{
    period: string;
    kind: PeriodKind;
    region: string | null;
    rank: number;
    score: number;
    total: number;
    top_percent: number;
    tier?: Tier;
    [key: string]: unknown;
  }>;
  [key: string]: unknown;
}

export interface PlayerHistory {
  board_id: string;
  player_id?: string;
  kind: Exclude<PeriodKind, "all-time">;
  region: string | null;
  results: Array<{
    period: string;
    rank: number;
    score: number;
    total: number;
    top_percent: number;
    tier?: Tier;
  }>;
  next: string | null;
  [key: string]: unknown;
}

export interface Submission {
  player_id?: string;
  score: number;
  region?: string | null;
  metadata?: Metadata | null;
  tiebreakers?: TieBreakers;
  team_id?: string;
}

export interface Standing {
  period: string;
  region: string | null;
  score: number;
  rank: number | null;
  previous_score: number | null;
  previous_rank: number | null;
  [key: string]: unknown;
}

/**
 * A submission's league group (league boards only: `SubmitResult.league`). A write ranks no
 * group: the rank, zone and lines are `leaguePlayer(boardId, playerId)`'s.
 */
export interface LeaguePlace {
  /** The season's period id. */
  season: string;
  tier: string;
  group_id: string;
  /** True on the write that placed the player in the group (their first of the season). */
  placed: boolean;
}

export interface SubmitResult {
  board_id: string;
  player_id: string;
  event_id: string;
  applied: boolean;
  version: number;
  standings: Standing[];
  /** On a league board only: the player's place in their group after this write. */
  league?: LeaguePlace;
  /** True when the service answered a replay of an earlier submission with the same
   *  idempotency key (header `Idempotent-Replayed: true`). Added by the client. */
  replayed: boolean;
  /** The idempotency key the submission was sent with (given, or generated). */
  idempotency_key: string;
  [key: string]: unknown;
}

export interface BatchItem extends Submission {
  player_id: string;
  idempotency_key?: string;
}

export interface BatchItemResult {
  status: number;
  replayed?: boolean;
  result?: Omit<SubmitResult, "replayed" | "idempotency_key">;
  error?: { message: string; code?: string; retry_after?: number; [key: string]: unknown };
}

export interface BatchResult {
  board_id: string;
  results: BatchItemResult[];
}

export interface PeriodInfo {
  period: string;
  kind: PeriodKind;
  starts_at: string | null;
  ends_at: string | null;
  status: "open" | "closed" | "archived";
  entries?: number;
}

/** A period's bounds and status (a league's `season`, an end's `ended` and `current`). */
export interface PeriodBounds {
  period: string;
  kind: PeriodKind;
  starts_at: string | null;
  /** null: a period of a schedule without cron, until an admin ends it. */
  ends_at: string | null;
  status: "open" | "closed";
}

export interface PeriodList {
  board_id: string;
  periods: PeriodInfo[];
}

export interface EndPeriodResult {
  board_id: string;
  ended: PeriodInfo;
  current: PeriodInfo;
}

export interface RebuildReport {
  board_id: string;
  entries: number;
  sorted_sets: number;
  players: number;
  version: number;
  seconds: number;
}

export interface FlagsPage {
  board_id: string;
  verdict: "flag" | "failed_open";
  player_id: string | null;
  flags: Array<Record<string, unknown>>;
  next: string | null;
}

export interface HiddenPlayerResult {
  board_id: string;
  player_id: string;
  hidden: boolean;
  hidden_at: string;
  reason: string | null;
  /** True when this call hid the player (201), false when they already were hidden (200). */
  created: boolean;
}

export interface HiddenPlayersPage {
  board_id: string;
  players: Array<{ player_id: string; hidden_at: string; reason: string | null }>;
  next: string | null;
}

export interface JoinResult {
  board_id: string;
  player_id: string;
  /** The window signed up for (a recurring tournament's: the one open now, else the next). */
  period: string;
  joined: boolean;
  /** Players signed up for that window. */
  participants: number;
}

export interface TournamentSummary {
  board_id: string;
  title: string | null;
  status: "open" | "upcoming" | "ended";
  period: string;
  starts_at: string;
  ends_at: string;
  join_required: boolean;
  max_participants: number | null;
  max_attempts: number | null;
  /** null: a one-shot tournament. */
  recurrence: Recurrence | null;
  /** No window starts before it (a recurring tournament without `starts_at`: its creation). */
  series_starts_at: string;
  /** No window starts at or after it; null: a recurring tournament that never ends. */
  series_ends_at: string | null;
  /** The shown window's players (signed up, or who played); null while Redis can't be read. */
  participants: number | null;
  /** The shown window's accepted submissions; null without `max_attempts`. */
  attempts: number | null;
  [key: string]: unknown;
}

/** `GET /boards/{board_id}/league`: the rules and each tier's groups for a season. */
export interface LeagueTiers {
  board_id: string;
  season: PeriodBounds;
  league: League;
  /** Lowest first. `players`: placed this season (hidden and removed ones too). */
  tiers: Array<{ tier: string; groups: number; players: number }>;
  [key: string]: unknown;
}

/** An entry of a league group: its rank within the group, and its zone. */
export interface LeagueEntry extends Entry {
  rank: number;
  zone: LeagueZone;
}

/** `GET /boards/{board_id}/league/groups/{group_id}`: a group's standings and its lines. */
export interface LeagueGroup {
  board_id: string;
  /** The season's period id. */
  season: string;
  tier: string;
  group_id: string | null;
  /** Visible players in the group (a hidden reader's own entry is shown to them, not counted). */
  players: number;
  /** The last rank promoted: ranks 1..promotion_line go up (null: the top tier, or none). */
  promotion_line: number | null;
  /** The first rank relegated: ranks from it on go down (null: the lowest tier, or none). */
  relegation_line: number | null;
  /** The whole group, best first. */
  entries: LeagueEntry[];
  [key: string]: unknown;
}

/** `GET /boards/{board_id}/league/players/{player_id}`: the player's own group. A player in
 *  no group this season has `group_id`, `rank` and `zone` null, no entries, and `tier`: the
 *  tier they would start the season in. */
export interface LeaguePlayer extends LeagueGroup {
  player_id: string;
  rank: number | null;
  zone: LeagueZone | null;
}

export interface Health {
  status: "ok" | "degraded";
  unreachable: string[];
  checks: Record<string, { status: string; latency_ms?: number; error?: string }>;
}

export interface WatchRequest {
  period?: PeriodKind;
  region?: string | null;
  top_n?: number;
  friends?: string[];
  ttl_seconds?: number;
}

export interface Watch {
  board_id: string;
  player_id: string;
  period_kind: PeriodKind;
  period: string;
  region: string | null;
  top_n: number;
  friends: string[];
  /** The player's channel: `/players/P<40 hex digits>`. */
  channel: string;
  expires_at: string;
  rank: number | null;
  score: number | null;
  [key: string]: unknown;
}

/** A live message on a board channel (`leaderboard.changed`). */
export interface BoardMessage {
  type: "leaderboard.changed";
  board_id: string;
  period_kind: PeriodKind;
  period: string;
  region: string | null;
  version: number;
  previous_version: number | null;
  total: number;
  top: Entry[];
  changed: Array<Entry & { previous_rank: number | null; removed?: boolean }>;
  changed_truncated: boolean;
  truncated: boolean;
  published_at: string;
  [key: string]: unknown;
}

/** A live message on a player channel (`player.standing_changed`). */
export interface PlayerMessage {
  type: "player.standing_changed";
  player_id: string;
  board_id: string;
  period_kind: PeriodKind;
  period: string;
  region: string | null;
  version: number;
  rank: number | null;
  previous_rank: number | null;
  score: number | null;
  tier?: Tier;
  top_n: number;
  events: Array<"passed" | "friend_passed" | "entered_top" | "left_top">;
  passed_by: Array<Entry & { friend: boolean }>;
  passed_by_truncated: boolean;
  published_at: string;
  [key: string]: unknown;
}
