/**
 * A client for the leaderboard service: every route of its HTTP API, typed errors, retries,
 * idempotent submissions, and live subscriptions (board and player channels).
 * See README.md, and docs/API.md for the contract.
 */

export * from "./errors.js";
export * from "./types.js";
export {
  LeaderboardClient,
  randomId,
  type Answer,
  type AroundQuery,
  type CallOptions,
  type ClientOptions,
  type EntriesQuery,
  type FlagsQuery,
  type HistoryQuery,
  type LeagueQuery,
  type ReadQuery,
  type RetryInfo,
  type SubmitOptions,
  type TokenSource,
} from "./client.js";
export {
  BoardSubscription,
  LiveConnection,
  PlayerSubscription,
  WebSocketUnavailable,
  type BoardSubscriptionOptions,
  type ConnectionStatus,
  type Frame,
  type LiveConnectionOptions,
  type LiveEndpoint,
  type LiveTestHooks,
  type PlayerSubscriptionOptions,
  type ReadReason,
  type SubscriptionStatus,
  type WebSocketFactory,
} from "./live.js";
