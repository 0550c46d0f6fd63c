// What needs no stack, with a scripted WebSocket and fetch: the keep-alive timeout, the watch
// renewal every ttl/2, reads while the socket is not up (before it ever was, too), no WebSocket
// in the runtime, Retry-After as a date or too long to wait, and which calls are repeated.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { LeaderboardClient, RateLimited, Unavailable, WebSocketUnavailable } from "../dist/leaderboard.js";
import { until, withoutGlobalWebSocket } from "./helpers.js";

const LIVE = { realtimeUrl: "ws://live.invalid/event/realtime", httpHost: "live.invalid", apiKey: "da2-key" };

/** A WebSocket whose server side is `script(socket, message)`; every instance is kept. */
function scriptedSocket(script) {
  const sockets = [];
  class Socket {
    constructor(url, protocols) {
      this.url = url;
      this.protocols = protocols;
      this.readyState = 0;
      this.sent = [];
      this.listeners = {};
      sockets.push(this);
      setTimeout(() => {
        if (this.readyState !== 0) return; // refused before it opened
        this.readyState = 1;
        this.emit("open", {});
      }, 1);
    }
    addEventListener(type, listener) {
      (this.listeners[type] ||= []).push(listener);
    }
    emit(type, event) {
      for (const listener of this.listeners[type] || []) listener(event);
    }
    send(text) {
      const message = JSON.parse(text);
      this.sent.push(message);
      script(this, message);
    }
    receive(frame) {
      this.emit("message", { data: JSON.stringify(frame) });
    }
    close() {
      if (this.readyState === 3) return;
      this.readyState = 3;
      this.emit("close", {});
    }
  }
  return { Socket, sockets };
}

/** A fetch answering from `route(method, url, body)` → [status, body, headers]. */
function scriptedFetch(route) {
  const calls = [];
  const fetch = async (url, init) => {
    const body = init.body ? JSON.parse(init.body) : undefined;
    calls.push({ method: init.method, url: String(url), body, headers: new Headers(init.headers) });
    const [status, answer, headers] = route(init.method, new URL(url), body);
    return new Response(answer === undefined ? null : JSON.stringify(answer), { status, headers });
  };
  return { fetch, calls };
}

const BOARD = { board_id: "b", mode: "best", live_channel: "/leaderboards/b", live_top: 10 };

/** A fetch serving board `b` and its entries (a page naming the read's number). */
function boardFetch() {
  let reads = 0;
  return scriptedFetch((method, url) => {
    if (url.pathname === "/boards/b") return [200, BOARD];
    if (url.pathname === "/boards/b/entries") {
      reads += 1;
      return [200, { board_id: "b", period: "all-time", total: 1, entries: [{ rank: 1, player_id: `read-${reads}`, score: reads }] }];
    }
    return [404, { message: "no such route", code: "not_found" }];
  });
}

describe("offline", () => {
  test("the connection goes quiet past connectionTimeoutMs: the client reconnects", async () => {
    const { Socket, sockets } = scriptedSocket((socket, message) => {
      if (message.type === "connection_init") socket.receive({ type: "connection_ack", connectionTimeoutMs: 150 });
    });
    const client = new LeaderboardClient({
      baseUrl: "http://api.invalid",
      live: LIVE,
      liveOptions: { WebSocket: Socket, backoffMinMs: 10, backoffMaxMs: 20 },
    });
    const connection = client.live();
    connection.connect();
    await until(() => connection.connections === 1, 2000, "the first connection");
    const [first] = sockets;
    // The subprotocols carry the host and the API key, base64url without padding.
    assert.equal(first.protocols[0], "aws-appsync-event-ws");
    const header = first.protocols[1].replace(/^header-/, "");
    assert.doesNotMatch(header, /[=+/]/);
    assert.deepEqual(JSON.parse(Buffer.from(header, "base64url").toString()), { host: "live.invalid", "x-api-key": "da2-key" });
    await until(() => connection.connections === 2, 2000, "a reconnect after the silence");
    assert.equal(first.readyState, 3, "the quiet socket was closed");
    await client.close();
  });

  test("keep-alives keep a connection open", async () => {
    const { Socket, sockets } = scriptedSocket((socket, message) => {
      if (message.type === "connection_init") {
        socket.receive({ type: "connection_ack", connectionTimeoutMs: 150 });
        socket.timer = setInterval(() => socket.receive({ type: "ka" }), 50);
      }
    });
    const client = new LeaderboardClient({ baseUrl: "http://api.invalid", live: LIVE, liveOptions: { WebSocket: Socket } });
    const connection = client.live();
    connection.connect();
    await until(() => connection.connections === 1, 2000, "the connection");
    await new Promise((resolve) => setTimeout(resolve, 500));
    assert.equal(connection.connections, 1);
    assert.equal(sockets.length, 1);
    clearInterval(sockets[0].timer);
    await client.close();
  });

  test("a player subscription renews its watch every ttl/2 (friends only on the first)", async () => {
    const channel = "/players/P" + "a".repeat(40);
    const { fetch, calls } = scriptedFetch((method) => {
      if (method === "PUT") {
        return [200, { board_id: "b", player_id: "ada", period_kind: "all-time", period: "all-time", region: null,
          top_n: 10, friends: ["bob"], channel, expires_at: new Date(Date.now() + 60_000).toISOString(), rank: 3, score: 1 }];
      }
      return [204, undefined];
    });
    const { Socket, sockets } = scriptedSocket((socket, message) => {
      if (message.type === "connection_init") socket.receive({ type: "connection_ack", connectionTimeoutMs: 300000 });
      if (message.type === "subscribe") socket.receive({ type: "subscribe_success", id: message.id });
    });
    const client = new LeaderboardClient({ baseUrl: "http://api.invalid", token: "tok", fetch, live: LIVE, liveOptions: { WebSocket: Socket } });
    const subscription = client.subscribePlayer({
      boardId: "b", playerId: "ada", friends: ["bob"], ttlSeconds: 0.2, onMessage: () => {},
    });
    await until(() => subscription.status.state === "live", 2000, "the subscription");
    const subscribe = sockets[0].sent.find((m) => m.type === "subscribe");
    assert.equal(subscribe.channel, channel);
    assert.deepEqual(subscribe.authorization, { host: "live.invalid", Authorization: "Bearer tok" });
    assert.equal(subscription.rank, 3);
    await new Promise((resolve) => setTimeout(resolve, 450));
    const puts = calls.filter((c) => c.method === "PUT");
    assert.ok(puts.length >= 4 && puts.length <= 6, `${puts.length} watches in 450 ms at one per 100 ms`);
    assert.deepEqual(puts[0].body, { ttl_seconds: 0.2, friends: ["bob"] });
    assert.ok(puts.slice(1).every((c) => !("friends" in c.body)), "renewals keep the friends");
    await client.close();
    const deletes = calls.filter((c) => c.method === "DELETE");
    assert.equal(deletes.length, 1, "closing ends the watch");
    const count = calls.filter((c) => c.method === "PUT").length;
    await new Promise((resolve) => setTimeout(resolve, 250));
    assert.equal(calls.filter((c) => c.method === "PUT").length, count, "no renewal after close");
  });

  test("Retry-After as an HTTP date is waited for", async () => {
    let answered = 0;
    const { fetch } = scriptedFetch(() => {
      answered += 1;
      if (answered === 1) {
        return [503, { message: "down", code: "unavailable" }, { "Retry-After": new Date(Date.now() + 1500).toUTCString() }];
      }
      return [200, { boards: [] }];
    });
    const retries = [];
    const client = new LeaderboardClient({ baseUrl: "http://api.invalid", fetch, onRetry: (r) => retries.push(r) });
    assert.deepEqual(await client.listBoards(), []);
    assert.equal(retries.length, 1);
    assert.ok(retries[0].delayMs >= 1000, `waited ${retries[0].delayMs} ms`);
  });

  test("a Retry-After longer than maxRetryAfterMs is thrown at once", async () => {
    const { fetch, calls } = scriptedFetch(() => [429, { message: "slow down", code: "rate_limited" }, { "Retry-After": "60" }]);
    const client = new LeaderboardClient({ baseUrl: "http://api.invalid", fetch, maxRetryAfterMs: 5000 });
    const started = Date.now();
    const error = await client.submitScore("b", { score: 1 }).catch((e) => e);
    assert.ok(error instanceof RateLimited);
    assert.equal(error.retryAfter, 60);
    assert.equal(calls.length, 1);
    assert.ok(Date.now() - started < 1000);
  });

  test("503 repeats the calls that are safe to repeat, never periods/end or rebuild", async () => {
    const { fetch, calls } = scriptedFetch(() => [503, { message: "Service Unavailable" }, { "Retry-After": "0" }]);
    const client = new LeaderboardClient({ baseUrl: "http://api.invalid", fetch, retries: 2, backoffBaseMs: 1 });
    await assert.rejects(client.endPeriod("b"), Unavailable);
    await assert.rejects(client.rebuild("b"), Unavailable);
    assert.equal(calls.length, 2);
    await assert.rejects(client.submitScore("b", { score: 1 }), Unavailable);
    const submits = calls.slice(2);
    assert.equal(submits.length, 3);
    assert.equal(new Set(submits.map((c) => c.headers.get("idempotency-key"))).size, 1);
  });

  test("the socket never connects: the first read is at once, then one every pollMs", async () => {
    // Refused at once, every time (a port nobody listens on).
    const { Socket, sockets } = scriptedSocket(() => {});
    class Refused extends Socket {
      constructor(url, protocols) {
        super(url, protocols);
        queueMicrotask(() => this.close()); // before it opens
      }
    }
    const { fetch, calls } = boardFetch();
    const client = new LeaderboardClient({
      baseUrl: "http://api.invalid",
      fetch,
      live: LIVE,
      liveOptions: { WebSocket: Refused, backoffMinMs: 20, backoffMaxMs: 50 },
    });
    const reads = [];
    const statuses = [];
    const started = Date.now();
    const subscription = client.subscribeBoard({
      boardId: "b",
      pollMs: 100,
      onUpdate: () => assert.fail("no socket, no message"),
      onSnapshot: (page, reason) => reads.push({ reason, at: Date.now() - started, first: page.entries[0].player_id }),
      onStatus: (status) => statuses.push(status.state),
    });
    try {
      await until(() => reads.length >= 1, 1000, "the first read");
      assert.deepEqual(reads[0], { reason: "start", at: reads[0].at, first: "read-1" });
      assert.ok(reads[0].at < 100, `the first read came after ${reads[0].at} ms, not at once`);
      await new Promise((resolve) => setTimeout(resolve, 550));
      const polls = reads.filter((r) => r.reason === "poll");
      assert.ok(polls.length >= 4 && polls.length <= 6, `${polls.length} polls in 550 ms at one per 100 ms`);
      assert.ok(sockets.length >= 3, `the socket is retried meanwhile (${sockets.length} tries)`);
      assert.equal(client.live().connections, 0);
      assert.equal(subscription.status.state, "waiting");
      assert.ok(statuses.includes("waiting"));
      assert.ok(calls.every((c) => c.method === "GET"));
    } finally {
      await client.close();
    }
    const count = reads.length;
    await new Promise((resolve) => setTimeout(resolve, 250));
    assert.equal(reads.length, count, "no poll after close");
  });

  test("the socket comes up late: polls until then, reads once subscribed, then stops polling", async () => {
    let tries = 0;
    const { Socket } = scriptedSocket((socket, message) => {
      if (message.type === "connection_init") socket.receive({ type: "connection_ack", connectionTimeoutMs: 300000 });
      if (message.type === "subscribe") socket.receive({ type: "subscribe_success", id: message.id });
    });
    class Late extends Socket {
      constructor(url, protocols) {
        super(url, protocols);
        tries += 1;
        if (tries <= 3) queueMicrotask(() => this.close()); // refused three times, then up
      }
    }
    const { fetch } = boardFetch();
    const client = new LeaderboardClient({
      baseUrl: "http://api.invalid",
      fetch,
      live: LIVE,
      liveOptions: { WebSocket: Late, backoffMinMs: 100, backoffMaxMs: 120 },
    });
    const reads = [];
    const subscription = client.subscribeBoard({ boardId: "b", pollMs: 50, onUpdate: () => {}, onSnapshot: (_, reason) => reads.push(reason) });
    try {
      await until(() => subscription.status.state === "live", 3000, "the subscription");
      await subscription.settled();
      const upTo = reads.indexOf("subscribed");
      assert.equal(reads[0], "start");
      assert.ok(upTo > 1 && reads.slice(1, upTo).every((r) => r === "poll"), `reads: ${reads}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
      assert.equal(reads.length, upTo + 1, `no poll once live: ${reads}`);
    } finally {
      await client.close();
    }
  });

  test("no global WebSocket and none given: onError says what to do, and polling serves reads", async () => {
    await withoutGlobalWebSocket(async () => {
      const { fetch } = boardFetch();
      const client = new LeaderboardClient({ baseUrl: "http://api.invalid", fetch, live: LIVE });
      const errors = [];
      const reads = [];
      const subscription = client.subscribeBoard({
        boardId: "b",
        pollMs: 100,
        onUpdate: () => {},
        onSnapshot: (_, reason) => reads.push(reason),
        onError: (error) => errors.push(error),
      });
      try {
        await until(() => errors.length === 1, 1000, "the error");
        const [error] = errors;
        assert.ok(error instanceof WebSocketUnavailable);
        assert.match(error.message, /Node\.js 22 or later/);
        assert.match(error.message, /liveOptions: \{ WebSocket \}/);
        assert.equal(subscription.status.state, "unavailable");
        assert.equal(subscription.status.reason, error.message);
        assert.equal(client.live().status.state, "unavailable");
        await until(() => reads.filter((r) => r === "poll").length >= 2, 1000, "polls");
        assert.equal(reads[0], "start");
        // A second subscription is told too; the first is not told again.
        const more = [];
        client.subscribeBoard({ boardId: "b", periodKind: "weekly", onUpdate: () => {}, onError: (e) => more.push(e) });
        await until(() => more.length === 1, 1000, "the second subscription's error");
        assert.ok(more[0] instanceof WebSocketUnavailable);
        assert.equal(errors.length, 1);
      } finally {
        await client.close();
      }
    });
  });

  test("no global WebSocket, one given (liveOptions.WebSocket): that one is used", async () => {
    await withoutGlobalWebSocket(async () => {
      const { Socket, sockets } = scriptedSocket((socket, message) => {
        if (message.type === "connection_init") socket.receive({ type: "connection_ack", connectionTimeoutMs: 300000 });
        if (message.type === "subscribe") socket.receive({ type: "subscribe_success", id: message.id });
      });
      const { fetch } = boardFetch();
      const errors = [];
      const client = new LeaderboardClient({ baseUrl: "http://api.invalid", fetch, live: LIVE, liveOptions: { WebSocket: Socket } });
      const subscription = client.subscribeBoard({ boardId: "b", onUpdate: () => {}, onError: (e) => errors.push(e) });
      try {
        await until(() => subscription.status.state === "live", 2000, "the subscription");
        assert.equal(sockets.length, 1);
        assert.equal(sockets[0].url, LIVE.realtimeUrl);
        assert.deepEqual(errors, []);
      } finally {
        await client.close();
      }
    });
  });
});
