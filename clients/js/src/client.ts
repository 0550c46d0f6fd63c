/**
 * The HTTP API (docs/API.md, "Routes at a glance"): one method per route, errors as typed
 * exceptions, retries with jittered exponential backoff on 429 and 503 (honouring
 * `Retry-After`), and an idempotency key on every submission, generated unless given, so that
 * a retry never counts twice.
 */

import { errorFor, LeaderboardError, NetworkError } from "./errors.js";
import type {
  AroundWindow,
  BatchItem,
  BatchResult,
  Board,
  BoardRequest,
  EndPeriodResult,
  EntriesPage,
  FlagsPage,
  Health,
  HiddenPlayerResult,
  HiddenPlayersPage,
  JoinResult,
  LeagueGroup,
  LeaguePlayer,
  LeagueTiers,
  PeriodKind,
  PeriodList,
  PlayerHistory,
  PlayersSelection,
  PlayerStanding,
  PlayerStandings,
  PutBoardResult,
  RebuildReport,
  Submission,
  SubmitResult,
  TournamentSummary,
  Watch,
  WatchRequest,
} from "./types.js";
import {
  BoardSubscription,
  type BoardSubscriptionOptions,
  LiveConnection,
  type LiveConnectionOptions,
  type LiveEndpoint,
  PlayerSubscription,
  type PlayerSubscriptionOptions,
} from "./live.js";

export type TokenSource = string | null | undefined | (() => string | null | undefined);

export interface RetryInfo {
  /** 1 for the first retry, then 2, 3, ... */
  attempt: number;
  /** How long the client waits before it. */
  delayMs: number;
  /** What the previous attempt got. */
  error: LeaderboardError;
  method: string;
  path: string;
}

export interface ClientOptions {
  /** The API's base URL, `http://127.0.0.1:3000` after `make run`; "" for the page's origin. */
  baseUrl: string;
  /** The bearer token sent with every call (a function is asked on each call); none: anonymous. */
  token?: TokenSource;
  /** Retries after a 429 or 503 (and, for calls that are safe to repeat, a lost answer). Default 3. */
  retries?: number;
  /** First backoff step; each retry doubles the ceiling (full jitter). Default 250 ms. */
  backoffBaseMs?: number;
  /** Largest backoff step. Default 8000 ms. */
  backoffMaxMs?: number;
  /** A `Retry-After` asking for longer than this is not waited for: the error is thrown. Default 60 s. */
  maxRetryAfterMs?: number;
  /** Per-attempt timeout. Default 10 s. */
  timeoutMs?: number;
  /** Told before each retry (logging, tests). */
  onRetry?: (info: RetryInfo) => void;
  /** The fetch to use (default: the global one). */
  fetch?: typeof fetch;
  /** Extra `fetch` options for every call (a browser page: `{cache: "no-store"}`). */
  requestInit?: RequestInit;
  /** Where the live updates are (stack outputs `LiveRealtimeUrl`, the host of `LiveHttpUrl`,
   *  `LiveApiKey`; locally `.local/stack.json`'s `live`). Needed for subscriptions only. */
  live?: LiveEndpoint;
  /** Options of the live connection (WebSocket implementation, backoff, test hooks). */
  liveOptions?: Omit<LiveConnectionOptions, "endpoint">;
}

/** Options of one call. */
export interface CallOptions {
  /** This call's token instead of the client's; `null`: send none. */
  token?: string | null;
  /** Abort the call (and its retries). */
  signal?: AbortSignal;
  /** This call's number of retries instead of the client's. */
  retries?: number;
}

export interface SubmitOptions extends CallOptions {
  /** The `Idempotency-Key` (1-128 printable ASCII characters, no spaces); generated if not given. */
  idempotencyKey?: string;
}

export interface ReadQuery {
  /** A period kind (`weekly`: the current week) or a period id (`2026-W47`). Default all-time. */
  period?: string;
  region?: string | null;
  /** Read as this player (a server's or admin's token), see docs/API.md "Who reads". */
  viewer?: string;
  /** `team`: read teams on a team board. */
  by?: "team";
  /** A team's members, ranked within it. */
  team?: string;
}

export interface EntriesQuery extends ReadQuery {
  limit?: number;
  offset?: number;
  around_rank?: number;
}

export interface AroundQuery extends ReadQuery {
  count?: number;
}

export interface HistoryQuery {
  kind?: Exclude<PeriodKind, "all-time">;
  region?: string | null;
  limit?: number;
  before?: string;
  viewer?: string;
  by?: "team";
}

/** The query of the league reads (docs/API.md, "Leagues"). */
export interface LeagueQuery {
  /** A season's id (`2026-11-30T000000Z`); default `custom`, the current season. */
  season?: string;
  /** Read as this player (a server's or admin's token), see docs/API.md "Who reads". Not
   *  taken by `league()`. */
  viewer?: string;
}

export interface FlagsQuery {
  verdict?: "flag" | "failed_open";
  player_id?: string;
  limit?: number;
  before?: string;
}

type Query = Record<string, string | number | boolean | null | undefined | string[]>;

interface RequestSpec {
  query?: Query;
  body?: unknown;
  headers?: Record<string, string>;
  /** Whether repeating the call after a lost answer or a 503 is harmless. */
  safe: boolean;
  /** Statuses answered as results rather than errors (`/health`'s 503). */
  accept?: number[];
}

export interface Answer<T> {
  status: number;
  data: T;
  headers: Headers;
}

/** A random UUID (v4), from the platform's crypto. */
export function randomId(): string {
  const webCrypto = globalThis.crypto;
  if (webCrypto && typeof webCrypto.randomUUID === "function") return webCrypto.randomUUID();
  const bytes = webCrypto.getRandomValues(new Uint8Array(16)); // not a secure context
  bytes[6] = (bytes[6]! & 0x0f) | 0x40;
  bytes[8] = (bytes[8]! & 0x3f) | 0x80;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const seg = encodeURIComponent;

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

function retryAfterSeconds(headers: Headers): number | undefined {
  const value = headers.get("retry-after");
  if (value === null) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - Date.now()) / 1000));
}

export class LeaderboardClient {
  readonly baseUrl: string;
  private readonly options: ClientOptions;
  private connection: LiveConnection | null = null;
  private readonly subscriptions = new Set<BoardSubscription | PlayerSubscription>();

  constructor(options: ClientOptions) {
    this.options = options;
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
  }

  // ---- the transport -------------------------------------------------------------------

  /** The token this call sends: the call's, else the client's. */
  tokenFor(call?: CallOptions): string | null {
    if (call && call.token !== undefined) return call.token;
    const source = this.options.token;
    const value = typeof source === "function" ? source() : source;
    return value ? value : null;
  }

  /** One call of the API with retries; the typed error when it fails for good. */
  async request<T>(method: string, path: string, spec: RequestSpec, call?: CallOptions): Promise<Answer<T>> {
    const retries = call?.retries ?? this.options.retries ?? 3;
    const base = this.options.backoffBaseMs ?? 250;
    const cap = this.options.backoffMaxMs ?? 8000;
    const maxRetryAfter = this.options.maxRetryAfterMs ?? 60_000;
    const url = this.baseUrl + path + this.queryString(spec.query);
    const headers: Record<string, string> = { Accept: "application/json", ...spec.headers };
    const token = this.tokenFor(call);
    if (token) headers.Authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (spec.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(spec.body);
    }
    for (let attempt = 0; ; attempt += 1) {
      let error: LeaderboardError;
      let retryAfter: number | undefined;
      try {
        const answer = await this.once<T>(method, url, headers, body, spec, call?.signal);
        if (!(answer instanceof LeaderboardError)) return answer;
        error = answer;
        retryAfter = answer.retryAfter;
        const retryable = error.status === 429 || (error.status === 503 && spec.safe);
        if (!retryable || attempt >= retries) throw error;
      } catch (thrown) {
        if (thrown instanceof LeaderboardError && !(thrown instanceof NetworkError)) throw thrown;
        if (call?.signal?.aborted) throw thrown;
        error =
          thrown instanceof NetworkError
            ? thrown
            : new NetworkError(`${method} ${path}: ${String((thrown as Error)?.message ?? thrown)}`, {
                cause: thrown,
              });
        if (!spec.safe || attempt >= retries) throw error;
        retryAfter = undefined;
      }
      const ceiling = Math.min(cap, base * 2 ** attempt);
      let delayMs = Math.random() * ceiling;
      if (retryAfter !== undefined) {
        if (retryAfter * 1000 > maxRetryAfter) throw error;
        delayMs = retryAfter * 1000 + Math.random() * base;
      }
      this.options.onRetry?.({ attempt: attempt + 1, delayMs, error, method, path });
      await sleep(delayMs, call?.signal);
    }
  }

  private async once<T>(
    method: string,
    url: string,
    headers: Record<string, string>,
    body: string | undefined,
    spec: RequestSpec,
    signal: AbortSignal | undefined,
  ): Promise<Answer<T> | LeaderboardError> {
    const timeout = new AbortController();
    const timer = setTimeout(
      () => timeout.abort(new Error("request timed out")),
      this.options.timeoutMs ?? 10_000,
    );
    const onAbort = () => timeout.abort(signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const doFetch = this.options.fetch ?? globalThis.fetch.bind(globalThis);
    try {
      let response: Response;
      let text: string;
      try {
        response = await doFetch(url, {
          ...this.options.requestInit,
          method,
          headers,
          body: body ?? null,
          signal: timeout.signal,
        });
        text = await response.text();
      } catch (error) {
        if (signal?.aborted) throw signal.reason;
        const why = timeout.signal.aborted ? "request timed out" : "network error";
        throw new NetworkError(`${method} ${url}: ${why}`, { cause: error });
      }
      let data: unknown = null;
      if (text) {
        try {
          data = JSON.parse(text);
        } catch {
          data = { message: text.slice(0, 200) };
        }
      }
      if (response.ok || spec.accept?.includes(response.status)) {
        return { status: response.status, data: data as T, headers: response.headers };
      }
      return errorFor(response.status, data, retryAfterSeconds(response.headers));
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  private queryString(query: Query | undefined): string {
    if (!query) return "";
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined || value === null || value === "") continue;
      params.set(key, Array.isArray(value) ? value.join(",") : String(value));
    }
    const text = params.toString();
    return text ? `?${text}` : "";
  }

  private async get<T>(path: string, query: Query | undefined, call?: CallOptions): Promise<T> {
    return (await this.request<T>("GET", path, { query, safe: true }, call)).data;
  }

  // ---- boards --------------------------------------------------------------------------

  /** `GET /boards`: every board, by id. */
  async listBoards(call?: CallOptions): Promise<Board[]> {
    return (await this.get<{ boards: Board[] }>("/boards", undefined, call)).boards;
  }

  /** `GET /boards/{board_id}`. */
  getBoard(boardId: string, call?: CallOptions): Promise<Board> {
    return this.get<Board>(`/boards/${seg(boardId)}`, undefined, call);
  }

  /** `PUT /boards/{board_id}` (admin): creates or updates (merge: fields left out are kept). */
  async putBoard(boardId: string, board: BoardRequest, call?: CallOptions): Promise<PutBoardResult> {
    const answer = await this.request<Board>("PUT", `/boards/${seg(boardId)}`, { body: board, safe: true }, call);
    return { board: answer.data, created: answer.status === 201 };
  }

  /** `GET /boards/{board_id}/periods`: open, closed and archived periods. */
  listPeriods(boardId: string, call?: CallOptions): Promise<PeriodList> {
    return this.get<PeriodList>(`/boards/${seg(boardId)}/periods`, undefined, call);
  }

  /** `POST /boards/{board_id}/periods/end` (admin): ends the current custom period now. Not
   *  repeated after a 503 or a lost answer (it would end the next period too). */
  async endPeriod(boardId: string, call?: CallOptions): Promise<EndPeriodResult> {
    const path = `/boards/${seg(boardId)}/periods/end`;
    return (await this.request<EndPeriodResult>("POST", path, { body: {}, safe: false }, call)).data;
  }

  /** `GET /tournaments`, optionally only `open`, `upcoming` or `ended` ones. */
  async listTournaments(status?: "open" | "upcoming" | "ended", call?: CallOptions): Promise<TournamentSummary[]> {
    const answer = await this.get<{ tournaments: TournamentSummary[] }>("/tournaments", { status }, call);
    return answer.tournaments;
  }

  /** `POST /boards/{board_id}/join`: signs a player up for a tournament (a player token signs
   *  itself up; a server or admin token names the player). */
  async join(boardId: string, playerId?: string, call?: CallOptions): Promise<JoinResult> {
    const body = playerId === undefined ? {} : { player_id: playerId };
    return (await this.request<JoinResult>("POST", `/boards/${seg(boardId)}/join`, { body, safe: true }, call)).data;
  }

  // ---- submitting ----------------------------------------------------------------------

  /** `POST /boards/{board_id}/scores` with an `Idempotency-Key` (generated unless given), so
   *  the retries after a 503 or a lost answer replay the first result instead of counting twice. */
  async submitScore(boardId: string, submission: Submission, call?: SubmitOptions): Promise<SubmitResult> {
    const key = call?.idempotencyKey ?? randomId();
    const answer = await this.request<SubmitResult>(
      "POST",
      `/boards/${seg(boardId)}/scores`,
      { body: submission, headers: { "Idempotency-Key": key }, safe: true },
      call,
    );
    return {
      ...answer.data,
      replayed: answer.headers.get("idempotent-replayed") === "true",
      idempotency_key: key,
    };
  }

  /** `POST /boards/{board_id}/scores/batch` (server or admin): up to 500 submissions, each
   *  given an `idempotency_key` unless it has one. Items fail alone: see each result's status. */
  async submitBatch(boardId: string, submissions: BatchItem[], call?: CallOptions): Promise<BatchResult> {
    const items = submissions.map((item) => ({ ...item, idempotency_key: item.idempotency_key ?? randomId() }));
    const path = `/boards/${seg(boardId)}/scores/batch`;
    return (await this.request<BatchResult>("POST", path, { body: { submissions: items }, safe: true }, call)).data;
  }

  // ---- reading -------------------------------------------------------------------------

  /** `GET /boards/{board_id}/entries`: a page (`offset`) or a window (`around_rank`). */
  entries(boardId: string, query: EntriesQuery = {}, call?: CallOptions): Promise<EntriesPage> {
    return this.get<EntriesPage>(`/boards/${seg(boardId)}/entries`, { ...query }, call);
  }

  /** `GET /boards/{board_id}/players/{player_id}`: one player's rank, score and top percent. */
  player(boardId: string, playerId: string, query: ReadQuery = {}, call?: CallOptions): Promise<PlayerStanding> {
    return this.get<PlayerStanding>(`/boards/${seg(boardId)}/players/${seg(playerId)}`, { ...query }, call);
  }

  /** `GET /boards/{board_id}/players/{player_id}/around`: the window around a player. */
  around(boardId: string, playerId: string, query: AroundQuery = {}, call?: CallOptions): Promise<AroundWindow> {
    return this.get<AroundWindow>(`/boards/${seg(boardId)}/players/${seg(playerId)}/around`, { ...query }, call);
  }

  /** `GET /boards/{board_id}/players?ids=`: up to 100 players at once, in board order. */
  players(boardId: string, ids: string[], query: ReadQuery = {}, call?: CallOptions): Promise<PlayersSelection> {
    return this.get<PlayersSelection>(`/boards/${seg(boardId)}/players`, { ...query, ids }, call);
  }

  /** `GET /boards/{board_id}/players/{player_id}/standings`: every current period at once. */
  standings(
    boardId: string,
    playerId: string,
    query: { region?: string | null; viewer?: string } = {},
    call?: CallOptions,
  ): Promise<PlayerStandings> {
    return this.get<PlayerStandings>(`/boards/${seg(boardId)}/players/${seg(playerId)}/standings`, { ...query }, call);
  }

  /** `GET /boards/{board_id}/players/{player_id}/history`: final standings of past periods. */
  history(boardId: string, playerId: string, query: HistoryQuery = {}, call?: CallOptions): Promise<PlayerHistory> {
    return this.get<PlayerHistory>(`/boards/${seg(boardId)}/players/${seg(playerId)}/history`, { ...query }, call);
  }

  // ---- leagues -------------------------------------------------------------------------

  /** `GET /boards/{board_id}/league`: the league's rules and each tier's groups and players
   *  placed, for the current season (or `season`). */
  league(boardId: string, query: Pick<LeagueQuery, "season"> = {}, call?: CallOptions): Promise<LeagueTiers> {
    return this.get<LeagueTiers>(`/boards/${seg(boardId)}/league`, { season: query.season }, call);
  }

  /** `GET /boards/{board_id}/league/players/{player_id}`: the player's own group, their rank
   *  and zone in it, and the promotion and relegation lines. */
  leaguePlayer(boardId: string, playerId: string, query: LeagueQuery = {}, call?: CallOptions): Promise<LeaguePlayer> {
    const path = `/boards/${seg(boardId)}/league/players/${seg(playerId)}`;
    return this.get<LeaguePlayer>(path, { season: query.season, viewer: query.viewer }, call);
  }

  /** `GET /boards/{board_id}/league/groups/{group_id}`: any group of the season by id (`gold-3`). */
  leagueGroup(boardId: string, groupId: string, query: LeagueQuery = {}, call?: CallOptions): Promise<LeagueGroup> {
    const path = `/boards/${seg(boardId)}/league/groups/${seg(groupId)}`;
    return this.get<LeagueGroup>(path, { season: query.season, viewer: query.viewer }, call);
  }

  /** `GET /health`: the stores' state. A degraded answer (503) is returned, not thrown. */
  async health(call?: CallOptions): Promise<Health> {
    const answer = await this.request<Health>("GET", "/health", { safe: true, accept: [503] }, { retries: 0, ...call });
    return answer.data;
  }

  // ---- admin ---------------------------------------------------------------------------

  /** `DELETE /boards/{board_id}/players/{player_id}` (admin): the player's entries, everywhere. */
  async deletePlayer(boardId: string, playerId: string, call?: CallOptions): Promise<void> {
    await this.request("DELETE", `/boards/${seg(boardId)}/players/${seg(playerId)}`, { safe: true }, call);
  }

  /** `POST /boards/{board_id}/rebuild` (admin): the board's serving data from PostgreSQL.
   *  Not repeated after a 503 or a lost answer. */
  async rebuild(boardId: string, call?: CallOptions): Promise<RebuildReport> {
    return (await this.request<RebuildReport>("POST", `/boards/${seg(boardId)}/rebuild`, { safe: false }, call)).data;
  }

  /** `GET /boards/{board_id}/flags` (admin): submissions the validation hook flagged. */
  flags(boardId: string, query: FlagsQuery = {}, call?: CallOptions): Promise<FlagsPage> {
    return this.get<FlagsPage>(`/boards/${seg(boardId)}/flags`, { ...query }, call);
  }

  /** `PUT /boards/{board_id}/hidden/{player_id}` (admin): hides a player (a shadow ban). */
  async hidePlayer(
    boardId: string,
    playerId: string,
    reason?: string | null,
    call?: CallOptions,
  ): Promise<HiddenPlayerResult> {
    const body = reason === undefined ? {} : { reason };
    const path = `/boards/${seg(boardId)}/hidden/${seg(playerId)}`;
    const answer = await this.request<Omit<HiddenPlayerResult, "created">>("PUT", path, { body, safe: true }, call);
    return { ...answer.data, created: answer.status === 201 };
  }

  /** `DELETE /boards/{board_id}/hidden/{player_id}` (admin): shows the player again. */
  async unhidePlayer(boardId: string, playerId: string, call?: CallOptions): Promise<void> {
    await this.request("DELETE", `/boards/${seg(boardId)}/hidden/${seg(playerId)}`, { safe: true }, call);
  }

  /** `GET /boards/{board_id}/hidden` (admin): the players the board hides, by id. */
  hiddenPlayers(boardId: string, query: { after?: string; limit?: number } = {}, call?: CallOptions): Promise<HiddenPlayersPage> {
    return this.get<HiddenPlayersPage>(`/boards/${seg(boardId)}/hidden`, { ...query }, call);
  }

  // ---- player channels -----------------------------------------------------------------

  /** `PUT /boards/{board_id}/players/{player_id}/watch`: watch (or renew the watch of) a
   *  player's standing for their player channel. */
  async watch(boardId: string, playerId: string, request: WatchRequest = {}, call?: CallOptions): Promise<Watch> {
    const path = `/boards/${seg(boardId)}/players/${seg(playerId)}/watch`;
    return (await this.request<Watch>("PUT", path, { body: request, safe: true }, call)).data;
  }

  /** `DELETE /boards/{board_id}/players/{player_id}/watch`: ends that watch. */
  async unwatch(
    boardId: string,
    playerId: string,
    query: { period?: PeriodKind; region?: string | null } = {},
    call?: CallOptions,
  ): Promise<void> {
    const path = `/boards/${seg(boardId)}/players/${seg(playerId)}/watch`;
    await this.request("DELETE", path, { query: { ...query }, safe: true }, call);
  }

  // ---- live updates --------------------------------------------------------------------

  /** The client's one live connection (one WebSocket for all its subscriptions), opened on
   *  first use. */
  live(): LiveConnection {
    if (!this.connection) {
      if (!this.options.live) throw new Error("no live endpoint: pass `live` to the client");
      this.connection = new LiveConnection({ ...this.options.liveOptions, endpoint: this.options.live });
    }
    return this.connection;
  }

  /** Follows a board's channel: `onUpdate` for each message in order; a missed message (its
   *  `previous_version` is not the last version seen) makes it read once, then go on. */
  subscribeBoard(options: BoardSubscriptionOptions): BoardSubscription {
    const subscription = new BoardSubscription(this, this.live(), options);
    this.subscriptions.add(subscription);
    subscription.start();
    return subscription;
  }

  /** Watches a player and follows their channel: `onMessage` for each of this watch's
   *  messages; a missed one (`previous_rank` is not the last rank seen) makes it read the
   *  player once, then go on. The watch is renewed every `ttl_seconds / 2`. */
  subscribePlayer(options: PlayerSubscriptionOptions): PlayerSubscription {
    const subscription = new PlayerSubscription(this, this.live(), options);
    this.subscriptions.add(subscription);
    subscription.start();
    return subscription;
  }

  /** Closes every subscription (player watches are ended) and the live connection; resolves
   *  once the watches are ended. */
  async close(): Promise<void> {
    const closing = [...this.subscriptions].map((subscription) => subscription.close());
    this.subscriptions.clear();
    this.connection?.close();
    this.connection = null;
    await Promise.all(closing);
  }
}
