/**
 * Live updates over the AppSync Events WebSocket protocol (docs/API.md, "Live updates" and
 * "Player channels"): one connection for any number of subscriptions, reconnected with jittered
 * exponential backoff (and when the server goes quiet for longer than its keep-alive timeout),
 * every subscription sent again after a reconnect; a board subscription reads once when it
 * misses a message (`previous_version`), a player subscription reads the player once when it
 * misses one (`previous_rank`) and renews its watch every `ttl_seconds / 2`.
 *
 * The global `WebSocket` is used unless one is given (`LiveConnectionOptions.WebSocket`): Node
 * 22+ and every browser have one; on an older Node pass one (the `ws` package's, say). Without
 * either, subscriptions are told so through `onError` (`WebSocketUnavailable`) and board
 * subscriptions go on reading by polling.
 */

import { LeaderboardError, NotFound } from "./errors.js";
import type { Board, BoardMessage, EntriesPage, PeriodKind, PlayerMessage, PlayerStanding, Watch } from "./types.js";

/** Where the event API is: the WebSocket URL, the HTTP host that goes into the authorization,
 *  and the (public) API key. */
export interface LiveEndpoint {
  realtimeUrl: string;
  httpHost: string;
  apiKey: string;
}

/** What the connection is doing: `connecting` (socket opening, waiting for `connection_ack`),
 *  `open` (acknowledged), `waiting` (lost or refused; a reconnect is scheduled), `unavailable`
 *  (no WebSocket implementation: nothing to retry with), `closed` (on purpose). `reason` says
 *  why the last connection failed. */
export interface ConnectionStatus {
  state: "connecting" | "open" | "waiting" | "unavailable" | "closed";
  reason: string;
  /** Reconnects scheduled in a row since the last acknowledged connection. */
  attempts: number;
}

type WebSocketLike = {
  readyState: number;
  send(data: string): void;
  close(code?: number, reason?: string): void;
  // `type` is there so that classes typed with their own event types (the `ws` package's) fit.
  addEventListener(type: string, listener: (event: { type: string; data?: unknown }) => void): void;
};
/** A WHATWG-compatible WebSocket class: the global one, or e.g. `import { WebSocket } from "ws"`. */
export type WebSocketFactory = new (url: string, protocols: string[]) => WebSocketLike;

/** Live updates cannot work: there is no global WebSocket (Node.js before 22) and none was given. */
export class WebSocketUnavailable extends Error {
  constructor() {
    super(
      "Live updates need a WebSocket, and this runtime has none (Node.js before 22). Use Node.js 22 " +
        "or later, or pass a WebSocket implementation: new LeaderboardClient({ ..., liveOptions: " +
        '{ WebSocket } }) with, e.g., import { WebSocket } from "ws". Until then board ' +
        "subscriptions read by polling every pollMs.",
    );
    this.name = "WebSocketUnavailable";
  }
}

export interface LiveTestHooks {
  /** Called with each frame received (parsed); returning true drops it, as if it never came. */
  dropFrame?: (frame: Frame) => boolean;
}

export interface LiveConnectionOptions {
  endpoint: LiveEndpoint;
  /** The WebSocket class (default: the global one): any WHATWG-compatible one, such as the `ws`
   *  package's `WebSocket`, where the runtime has none (Node.js before 22). */
  WebSocket?: WebSocketFactory;
  /** Reconnect backoff: full jitter between min and a ceiling doubling per failure. */
  backoffMinMs?: number;
  backoffMaxMs?: number;
  /** `connection_ack` must come within this after the socket is asked for. Default 10 s. */
  ackTimeoutMs?: number;
  /** For tests: see `LiveTestHooks`. */
  hooks?: LiveTestHooks;
}

export interface Frame {
  type: string;
  id?: string;
  event?: unknown;
  errors?: Array<{ errorType?: string; message?: string }>;
  connectionTimeoutMs?: number;
  [key: string]: unknown;
}

interface Registration {
  id: string;
  channel: string;
  authorization: () => Record<string, string>;
  /** `subscribe_success`: `resubscribed` after a reconnect. */
  onSubscribed: (resubscribed: boolean) => void;
  onRefused: (message: string) => void;
  onData: (event: unknown) => void;
  /** The connection was lost: the subscription waits for its resubscription. */
  onLost: () => void;
  /** There is no WebSocket to connect with (told once per registration). */
  onUnavailable: (error: WebSocketUnavailable) => void;
  subscribedOnce: boolean;
  toldUnavailable: boolean;
}

const DEFAULT_CONNECTION_TIMEOUT_MS = 300_000;
const OPEN = 1;

function base64url(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function newId(): string {
  return globalThis.crypto.randomUUID
    ? globalThis.crypto.randomUUID()
    : Array.from(globalThis.crypto.getRandomValues(new Uint8Array(16)), (b) => b.toString(16).padStart(2, "0")).join("");
}

function firstError(frame: Frame): string {
  const error = Array.isArray(frame.errors) ? frame.errors[0] : undefined;
  return error ? String(error.message || error.errorType || "error") : "error";
}

/** One WebSocket to the event API, kept open: reconnected with backoff whenever it closes or
 *  goes quiet, its subscriptions sent again each time. */
export class LiveConnection {
  readonly endpoint: LiveEndpoint;
  private readonly options: LiveConnectionOptions;
  private ws: WebSocketLike | null = null;
  private ready = false;
  private closed = false;
  private attempts = 0;
  private failure = "";
  /** Set while no WebSocket implementation can be found; looked up again on each `connect`. */
  private unavailable: WebSocketUnavailable | null = null;
  private retryTimer: ReturnType<typeof setTimeout> | undefined;
  private idleTimer: ReturnType<typeof setTimeout> | undefined;
  private timeoutMs = DEFAULT_CONNECTION_TIMEOUT_MS;
  private readonly registrations = new Map<string, Registration>();
  private readonly listeners = new Set<(status: ConnectionStatus) => void>();
  /** Acknowledged connections so far (1 after the first; more after reconnects). */
  connections = 0;

  constructor(options: LiveConnectionOptions) {
    this.options = options;
    this.endpoint = options.endpoint;
  }

  /** The current socket (tests close it to see the connection come back). */
  get socket(): WebSocketLike | null {
    return this.ws;
  }

  get status(): ConnectionStatus {
    const state = this.closed
      ? "closed"
      : this.ready
        ? "open"
        : this.ws
          ? "connecting"
          : this.unavailable
            ? "unavailable"
            : "waiting";
    return { state, reason: this.failure, attempts: this.attempts };
  }

  /** Told of every change of `status`; returns a function that stops telling. */
  onStatus(listener: (status: ConnectionStatus) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Opens the socket now (subscribing opens it too). */
  connect(): void {
    this.closed = false;
    if (!this.ws && this.retryTimer === undefined) this.open();
  }

  /** Sends `subscribe` now if the connection is up, and again after every reconnect. */
  add(registration: Omit<Registration, "id" | "subscribedOnce" | "toldUnavailable">): string {
    const id = newId();
    const entry: Registration = { ...registration, id, subscribedOnce: false, toldUnavailable: false };
    this.registrations.set(id, entry);
    if (this.ready) this.sendSubscribe(entry);
    else this.connect();
    return id;
  }

  /** Unsubscribes (`unsubscribe`), and forgets the subscription. */
  remove(id: string): void {
    if (!this.registrations.delete(id)) return;
    if (this.ready) this.send({ type: "unsubscribe", id });
  }

  /** Closes the socket on purpose: no reconnect until `connect` or a new subscription. */
  close(): void {
    this.closed = true;
    this.attempts = 0;
    this.failure = "";
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.drop(false);
    this.emit();
  }

  private emit(): void {
    const status = this.status;
    for (const listener of this.listeners) listener(status);
  }

  private send(message: unknown): void {
    if (this.ws && this.ws.readyState === OPEN) this.ws.send(JSON.stringify(message));
  }

  private sendSubscribe(entry: Registration): void {
    this.send({
      type: "subscribe",
      id: entry.id,
      channel: entry.channel,
      authorization: entry.authorization(),
    });
  }

  private open(): void {
    this.retryTimer = undefined;
    const { endpoint } = this;
    const auth = { host: endpoint.httpHost, "x-api-key": endpoint.apiKey };
    const protocols = ["aws-appsync-event-ws", `header-${base64url(JSON.stringify(auth))}`];
    const Impl = this.options.WebSocket ?? (globalThis.WebSocket as unknown as WebSocketFactory | undefined);
    if (!Impl) {
      // Retrying cannot help: say what to do, once to each subscription (their onError).
      this.unavailable = new WebSocketUnavailable();
      this.failure = this.unavailable.message;
      for (const entry of this.registrations.values()) {
        if (entry.toldUnavailable) continue;
        entry.toldUnavailable = true;
        entry.onUnavailable(this.unavailable);
      }
      this.emit();
      return;
    }
    this.unavailable = null;
    let ws: WebSocketLike;
    try {
      ws = new Impl(endpoint.realtimeUrl, protocols);
    } catch (error) {
      this.lost(`WebSocket failed: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    this.ws = ws;
    this.ready = false;
    this.armIdle(this.options.ackTimeoutMs ?? 10_000);
    // Events of a socket that was replaced or closed on purpose are ignored.
    ws.addEventListener("open", () => {
      if (ws === this.ws) this.send({ type: "connection_init" });
    });
    ws.addEventListener("message", (event) => {
      if (ws === this.ws) this.onFrame(event.data);
    });
    ws.addEventListener("close", () => {
      if (ws === this.ws) this.lost("WebSocket unavailable");
    });
    // A close follows every error; but the `ws` package's socket throws an error nobody listens
    // to (a refused connection would crash the process).
    ws.addEventListener("error", () => {});
    this.emit();
  }

  /** Forgets the socket (closing it) without scheduling anything; `notify`: tell the
   *  subscriptions they lost it (not when closing on purpose). */
  private drop(notify = true): void {
    clearTimeout(this.idleTimer);
    const ws = this.ws;
    const wasReady = this.ready;
    this.ws = null;
    this.ready = false;
    if (ws) {
      try {
        ws.close(1000);
      } catch {
        // already closing
      }
    }
    if (wasReady && notify) for (const entry of this.registrations.values()) entry.onLost();
  }

  /** The socket failed, closed or went quiet: reconnect after a jittered, growing delay. */
  private lost(reason: string): void {
    this.drop();
    this.failure = reason;
    if (this.closed) return;
    const min = this.options.backoffMinMs ?? 500;
    const max = this.options.backoffMaxMs ?? 15_000;
    const ceiling = Math.min(max, min * 2 ** (this.attempts + 1));
    this.attempts += 1;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.open(), min + Math.random() * (ceiling - min));
    this.emit();
  }

  private armIdle(ms: number): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.lost("WebSocket unavailable"), ms);
  }

  private onFrame(raw: unknown): void {
    let frame: Frame;
    try {
      frame = JSON.parse(String(raw)) as Frame;
    } catch {
      return;
    }
    if (!frame || typeof frame !== "object") return;
    if (this.options.hooks?.dropFrame?.(frame)) return;
    // Anything at all, a keep-alive included, shows the connection is alive.
    this.armIdle(this.ready ? this.timeoutMs : (this.options.ackTimeoutMs ?? 10_000));
    const entry = typeof frame.id === "string" ? this.registrations.get(frame.id) : undefined;
    switch (frame.type) {
      case "connection_ack": {
        this.ready = true;
        this.attempts = 0;
        this.failure = "";
        this.connections += 1;
        const timeout = Number(frame.connectionTimeoutMs);
        this.timeoutMs = timeout > 0 ? timeout : DEFAULT_CONNECTION_TIMEOUT_MS;
        this.armIdle(this.timeoutMs);
        for (const registration of this.registrations.values()) this.sendSubscribe(registration);
        this.emit();
        break;
      }
      case "connection_error":
        this.lost(`WebSocket refused: ${firstError(frame)}`);
        break;
      case "subscribe_success":
        if (entry) {
          const again = entry.subscribedOnce;
          entry.subscribedOnce = true;
          entry.onSubscribed(again);
        }
        break;
      case "subscribe_error":
        entry?.onRefused(firstError(frame));
        break;
      case "data":
        entry?.onData(frame.event);
        break;
      default: // ka, unsubscribe_success, errors of unsubscribes: nothing to do
        break;
    }
  }
}

/** What a subscription is doing: `connecting` until its `subscribe_success`, `live` while
 *  messages come, `waiting` while the connection is down (a reconnect is scheduled),
 *  `unavailable` (no WebSocket in this runtime and none given: see `onError`), `refused`
 *  (`subscribe_error`: a bad channel or authorization; not retried), `closed`. A board
 *  subscription polls whenever it is not `live`. */
export interface SubscriptionStatus {
  state: "connecting" | "live" | "waiting" | "unavailable" | "refused" | "closed";
  channel: string | null;
  reason: string;
}

interface Handlers {
  onStatus?: (status: SubscriptionStatus) => void;
  /** A failed read (of the board, the entries, the watch...), or `WebSocketUnavailable` (no
   *  WebSocket to connect with); the subscription goes on. */
  onError?: (error: unknown) => void;
}

interface ClientLike {
  getBoard(boardId: string, call?: { token?: string | null }): Promise<Board>;
  entries(boardId: string, query: Record<string, unknown>, call?: { token?: string | null }): Promise<EntriesPage>;
  player(boardId: string, playerId: string, query: Record<string, unknown>, call?: { token?: string | null }): Promise<PlayerStanding>;
  watch(boardId: string, playerId: string, request: Record<string, unknown>, call?: { token?: string | null }): Promise<Watch>;
  unwatch(boardId: string, playerId: string, query: Record<string, unknown>, call?: { token?: string | null }): Promise<void>;
  tokenFor(call?: { token?: string | null }): string | null;
}

/** Why a subscription reads: `start` (at once when subscribing, whatever the socket does),
 *  `subscribed` (the channel's subscription acknowledged, the first and after each reconnect),
 *  `gap` (a message was missed), `poll` (the socket is not up). */
export type ReadReason = "start" | "subscribed" | "gap" | "poll";

abstract class Subscription<Message> {
  protected readonly client: ClientLike;
  protected readonly connection: LiveConnection;
  protected registrationId: string | null = null;
  protected stopped = false;
  /** Frames are handled one after another (a gap's read finishes before the next message). */
  private queue: Promise<void> = Promise.resolve();
  private current: SubscriptionStatus = { state: "connecting", channel: null, reason: "" };
  private unlisten: (() => void) | null = null;
  private readonly handlers: Handlers;
  /** Reads made because of a gap (a missed message). */
  gaps = 0;
  /** Subscriptions acknowledged (more than 1 after reconnects). */
  subscriptions = 0;

  constructor(client: ClientLike, connection: LiveConnection, handlers: Handlers) {
    this.client = client;
    this.connection = connection;
    this.handlers = handlers;
  }

  get status(): SubscriptionStatus {
    return this.current;
  }

  get channel(): string | null {
    return this.current.channel;
  }

  protected setStatus(state: SubscriptionStatus["state"], reason = "", channel = this.current.channel): void {
    if (this.current.state === state && this.current.reason === reason && this.current.channel === channel) return;
    this.current = { state, channel, reason };
    this.handlers.onStatus?.(this.current);
  }

  protected fail(error: unknown): void {
    if (this.handlers.onError) this.handlers.onError(error);
  }

  /** Runs `task` after everything queued before it. */
  protected enqueue(task: () => Promise<void> | void): Promise<void> {
    this.queue = this.queue.then(task).catch((error: unknown) => this.fail(error));
    return this.queue;
  }

  protected register(channel: string, authorization: () => Record<string, string>): void {
    if (this.stopped) return;
    this.setStatus("connecting", "", channel);
    this.unlisten = this.connection.onStatus((status) => {
      const state = this.current.state;
      if (state === "refused" || state === "closed" || state === "unavailable") return;
      if (status.state === "waiting") this.setStatus("waiting", status.reason);
      else if (status.state === "open" && this.current.state === "waiting") this.setStatus("connecting");
    });
    this.registrationId = this.connection.add({
      channel,
      authorization,
      onSubscribed: (again) =>
        this.enqueue(async () => {
          this.subscriptions += 1;
          this.setStatus("live");
          await this.subscribed(again);
        }),
      onRefused: (message) => this.setStatus("refused", message),
      onData: (event) => {
        let message: unknown;
        try {
          message = typeof event === "string" ? JSON.parse(event) : event;
        } catch {
          return;
        }
        void this.enqueue(() => this.data(message as Message));
      },
      onLost: () => this.lost(),
      onUnavailable: (error) => {
        this.setStatus("unavailable", error.message);
        this.fail(error);
      },
    });
  }

  /** Stops: unsubscribes (the connection stays for the client's other subscriptions). */
  close(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.registrationId) this.connection.remove(this.registrationId);
    this.registrationId = null;
    this.unlisten?.();
    this.stopTimers();
    this.setStatus("closed");
  }

  /** Waits until everything received so far has been handled (tests). */
  settled(): Promise<void> {
    return this.queue;
  }

  protected lost(): void {
    // the connection's status listener reports `waiting`
  }

  protected stopTimers(): void {}

  protected abstract subscribed(resubscribed: boolean): Promise<void>;
  protected abstract data(message: Message): Promise<void>;
}

export interface BoardSubscriptionOptions extends Handlers {
  boardId: string;
  /** The period kind: `all-time` (default), `daily`, `weekly` or `monthly`. */
  periodKind?: Exclude<PeriodKind, "custom"> | "custom";
  /** A region of the board; none: the global board. */
  region?: string | null;
  /** The board object, when the caller has it (saves the first read). */
  board?: Board;
  /** Each message that follows the last one, in order. `gap`: one was missed before it (the
   *  read for it is done by then). */
  onUpdate: (message: BoardMessage, info: { gap: boolean }) => void;
  /** The page read at once, on (re)subscription, on a gap, and while polling (the default
   *  `read`). */
  onSnapshot?: (page: EntriesPage, reason: ReadReason) => void;
  /** What to read instead of the default (`entries?limit=<live_top>` of the channel's board
   *  and period): whatever the caller keeps beyond the top. */
  read?: (reason: ReadReason) => Promise<void>;
  /** While the subscription is not live (the socket cannot connect, was never up, or is
   *  down), read every this many ms (docs: "poll entries every few seconds"). Default 5000; 0:
   *  never. */
  pollMs?: number;
}

/** A board channel (`<live_channel>/<period kind>[/<region>]`), as docs/API.md "What a client
 *  does" prescribes. */
export class BoardSubscription extends Subscription<BoardMessage> {
  readonly options: BoardSubscriptionOptions;
  private board: Board | null;
  private lastVersion: number | null = null;
  private pollTimer: ReturnType<typeof setInterval> | undefined;

  constructor(client: ClientLike, connection: LiveConnection, options: BoardSubscriptionOptions) {
    super(client, connection, options);
    this.options = options;
    this.board = options.board ?? null;
  }

  /** The last version seen on the channel (null right after a read). */
  get version(): number | null {
    return this.lastVersion;
  }

  start(): void {
    void this.enqueue(async () => {
      let board = this.board;
      if (!board) {
        try {
          board = await this.client.getBoard(this.options.boardId);
        } catch (error) {
          // No board, no channel: say so, and stop (a new subscription tries again).
          this.setStatus("refused", error instanceof Error ? error.message : String(error));
          throw error;
        }
      }
      this.board = board;
      const kind = this.options.periodKind ?? "all-time";
      const region = this.options.region ? `/${this.options.region}` : "";
      const { httpHost, apiKey } = this.connection.endpoint;
      this.register(`${board.live_channel}/${kind}${region}`, () => ({ host: httpHost, "x-api-key": apiKey }));
      if (this.stopped) return;
      // Something to show now, whatever the socket does (it may never connect), and polling
      // until the channel's subscription is acknowledged.
      this.startPolling();
      await this.readOnce("start");
    });
  }

  protected async subscribed(resubscribed: boolean): Promise<void> {
    this.stopPolling();
    // After a reconnect the board is read again (its live_top may have changed).
    if (resubscribed) {
      try {
        this.board = await this.client.getBoard(this.options.boardId);
      } catch (error) {
        this.fail(error);
      }
    }
    this.lastVersion = null;
    await this.readOnce("subscribed");
  }

  protected async data(message: BoardMessage): Promise<void> {
    if (this.stopped || !message || message.type !== "leaderboard.changed" || !Number.isFinite(message.version)) return;
    const last = this.lastVersion;
    if (last !== null && message.version <= last) return; // old or repeated: nothing new
    const gap = last !== null && message.previous_version !== last;
    if (gap) {
      this.gaps += 1;
      await this.readOnce("gap");
    }
    this.lastVersion = message.version;
    this.options.onUpdate(message, { gap });
  }

  protected override lost(): void {
    this.startPolling();
  }

  protected override stopTimers(): void {
    this.stopPolling();
  }

  private async readOnce(reason: ReadReason): Promise<void> {
    try {
      if (this.options.read) {
        await this.options.read(reason);
        return;
      }
      const board = this.board;
      if (!board) return;
      const page = await this.client.entries(board.board_id, {
        period: this.options.periodKind ?? "all-time",
        region: this.options.region ?? undefined,
        limit: board.live_top,
      });
      this.options.onSnapshot?.(page, reason);
    } catch (error) {
      this.fail(error);
    }
  }

  private startPolling(): void {
    const every = this.options.pollMs ?? 5000;
    if (every <= 0 || this.pollTimer !== undefined || this.stopped) return;
    this.pollTimer = setInterval(() => {
      if (this.status.state !== "live") void this.enqueue(() => this.readOnce("poll"));
    }, every);
  }

  private stopPolling(): void {
    clearInterval(this.pollTimer);
    this.pollTimer = undefined;
  }
}

export interface PlayerSubscriptionOptions extends Handlers {
  boardId: string;
  playerId: string;
  /** The player's token (or a server's); default: the client's. */
  token?: string;
  /** The watch: period kind (default all-time), region, top N, friends, ttl. */
  period?: PeriodKind;
  region?: string | null;
  topN?: number;
  /** Sent with the first watch only (renewals keep them). */
  friends?: string[];
  ttlSeconds?: number;
  /** This watch's messages, in order. `gap`: one was missed before it (the player was read
   *  once by then: see `onStanding`). */
  onMessage: (message: PlayerMessage, info: { gap: boolean }) => void;
  /** The watch's answer (on start and after every reconnect). */
  onWatch?: (watch: Watch) => void;
  /** The player's standing read after a gap (null: no entry). */
  onStanding?: (standing: PlayerStanding | null) => void;
  /** Ends the watch (`DELETE .../watch`) on `close`. Default true. */
  unwatchOnClose?: boolean;
}

/** A player's channel for one watch (board, period kind, region), as docs/API.md "What a
 *  client does on a player channel" prescribes. */
export class PlayerSubscription extends Subscription<PlayerMessage> {
  readonly options: PlayerSubscriptionOptions;
  private lastRank: number | null = null;
  private renewTimer: ReturnType<typeof setInterval> | undefined;
  /** The last watch answer. */
  watchAnswer: Watch | null = null;
  /** Watches made (the first, renewals, and after reconnects). */
  watches = 0;

  constructor(client: ClientLike, connection: LiveConnection, options: PlayerSubscriptionOptions) {
    super(client, connection, options);
    this.options = options;
  }

  /** The last rank seen for this watch. */
  get rank(): number | null {
    return this.lastRank;
  }

  private call(): { token?: string | null } {
    return this.options.token === undefined ? {} : { token: this.options.token };
  }

  private async putWatch(first: boolean): Promise<Watch> {
    const request: Record<string, unknown> = {};
    if (this.options.period) request.period = this.options.period;
    if (this.options.region) request.region = this.options.region;
    if (this.options.topN !== undefined) request.top_n = this.options.topN;
    if (this.options.ttlSeconds !== undefined) request.ttl_seconds = this.options.ttlSeconds;
    if (first && this.options.friends) request.friends = this.options.friends;
    const watch = await this.client.watch(this.options.boardId, this.options.playerId, request, this.call());
    this.watches += 1;
    this.watchAnswer = watch;
    return watch;
  }

  start(): void {
    void this.enqueue(async () => {
      const watch = await this.putWatch(true);
      this.lastRank = watch.rank;
      this.options.onWatch?.(watch);
      const token = this.client.tokenFor(this.call());
      const { httpHost } = this.connection.endpoint;
      this.register(watch.channel, () => ({
        host: httpHost,
        ...(token ? { Authorization: `Bearer ${token}` } : {}),
      }));
      const ttl = watch.expires_at ? (Date.parse(watch.expires_at) - Date.now()) / 1000 : NaN;
      const seconds = this.options.ttlSeconds ?? (Number.isFinite(ttl) && ttl > 0 ? ttl : 3600);
      this.renewTimer = setInterval(() => {
        void this.putWatch(false).catch((error: unknown) => this.fail(error));
      }, (seconds * 1000) / 2);
    });
  }

  protected async subscribed(resubscribed: boolean): Promise<void> {
    if (!resubscribed) return;
    // After a reconnect: watch again; its answer is the standing to start from.
    try {
      const watch = await this.putWatch(false);
      this.lastRank = watch.rank;
      this.options.onWatch?.(watch);
    } catch (error) {
      this.fail(error);
    }
  }

  protected async data(message: PlayerMessage): Promise<void> {
    if (this.stopped || !message || message.type !== "player.standing_changed") return;
    // The channel carries all of the player's watches: keep this one's.
    if (message.board_id !== this.options.boardId) return;
    if (message.period_kind !== (this.options.period ?? "all-time")) return;
    if ((message.region ?? null) !== (this.options.region ?? null)) return;
    const gap = message.previous_rank !== this.lastRank;
    if (gap) {
      this.gaps += 1;
      let standing: PlayerStanding | null = null;
      try {
        standing = await this.client.player(
          this.options.boardId,
          this.options.playerId,
          { period: this.options.period ?? "all-time", region: this.options.region ?? undefined },
          this.call(),
        );
      } catch (error) {
        if (!(error instanceof NotFound)) this.fail(error);
      }
      this.options.onStanding?.(standing);
    }
    this.lastRank = message.rank;
    this.options.onMessage(message, { gap });
  }

  protected override stopTimers(): void {
    clearInterval(this.renewTimer);
    this.renewTimer = undefined;
  }

  /** Unsubscribes and ends the watch (unless `unwatchOnClose` is false); the promise settles
   *  once the watch is ended. */
  override async close(): Promise<void> {
    const wasStopped = this.stopped;
    super.close();
    if (wasStopped || this.options.unwatchOnClose === false) return;
    const query: Record<string, unknown> = { period: this.options.period, region: this.options.region ?? undefined };
    try {
      await this.client.unwatch(this.options.boardId, this.options.playerId, query, this.call());
    } catch (error) {
      if (!(error instanceof LeaderboardError && error.status === 404)) this.fail(error);
    }
  }
}
