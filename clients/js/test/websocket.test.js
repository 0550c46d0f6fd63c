// Against the stack, what the socket cannot do: a live URL nobody listens on (the first read at
// once, then a poll every pollMs), no WebSocket in the runtime (onError says what to do, reads go
// on by polling), and a WebSocket implementation passed in (the `ws` package's) instead of the
// global one. Runs on Node.js 20 as well (tests/clients/test_js_client.py does, when one is there).
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { WebSocket as WsWebSocket } from "ws";

import { WebSocketUnavailable } from "../dist/leaderboard.js";
import { boardId, client, env, freePort, noStack, token, until, withoutGlobalWebSocket } from "./helpers.js";

describe("the socket", { skip: noStack || (!env.live && "no live endpoint") }, () => {
  const admin = () => client({ token: token("admin") });
  const server = () => client({ token: token("server") });

  /** A board with one score, and a client following it with `options`, recording what it is told. */
  async function follow(clientOptions, subscriptionOptions = {}) {
    const id = boardId("jsws");
    await admin().putBoard(id, { mode: "best" });
    await server().submitScore(id, { player_id: "js-ada", score: 1 });
    const seen = { reads: [], updates: [], errors: [] };
    const started = Date.now();
    const live = client(clientOptions);
    const subscription = live.subscribeBoard({
      boardId: id,
      onUpdate: (message) => seen.updates.push(message),
      onSnapshot: (page, reason) => seen.reads.push({ reason, at: Date.now() - started, players: page.entries.map((e) => e.player_id) }),
      onError: (error) => seen.errors.push(error),
      ...subscriptionOptions,
    });
    return { id, live, subscription, seen };
  }

  // The runtime's WebSocket (none on Node.js 20) and the ws package's: each must fail and retry.
  const implementations = [["the global WebSocket", globalThis.WebSocket], ["the ws package's", WsWebSocket]];
  for (const [name, WebSocket] of implementations.filter(([, impl]) => impl)) {
    test(`a live URL nobody listens on (${name}): the first read at once, then a poll every pollMs`, async () => {
      const port = await freePort();
      const nowhere = { ...env.live, realtimeUrl: `ws://127.0.0.1:${port}/event/realtime` };
      const { id, live, subscription, seen } = await follow(
        { live: nowhere, liveOptions: { WebSocket, backoffMinMs: 50, backoffMaxMs: 200 } },
        { pollMs: 300 },
      );
      try {
        await until(() => seen.reads.length >= 1, 2000, "the first read");
        assert.equal(seen.reads[0].reason, "start");
        assert.deepEqual(seen.reads[0].players, ["js-ada"]);
        await server().submitScore(id, { player_id: "js-bob", score: 2 });
        const poll = await until(() => seen.reads.find((r) => r.reason === "poll" && r.players.includes("js-bob")), 3000, "a poll with bob");
        assert.ok(poll.at < 2000, `polled after ${poll.at} ms`);
        await until(() => seen.reads.filter((r) => r.reason === "poll").length >= 3, 3000, "more polls");
        const connection = live.live();
        assert.equal(connection.connections, 0);
        assert.ok(connection.status.attempts >= 2, `${connection.status.attempts} attempts to connect`);
        assert.equal(subscription.status.state, "waiting");
        assert.deepEqual(seen.updates, []);
        assert.deepEqual(seen.errors, []);
      } finally {
        await live.close();
      }
    });
  }

  test("no global WebSocket and none given: onError says what to do, and polling reads the stack", async () => {
    await withoutGlobalWebSocket(async () => {
      const { id, live, subscription, seen } = await follow({}, { pollMs: 300 });
      try {
        await until(() => seen.errors.length === 1, 2000, "the error");
        assert.ok(seen.errors[0] instanceof WebSocketUnavailable);
        assert.match(seen.errors[0].message, /Use Node\.js 22 or later, or pass a WebSocket implementation/);
        assert.equal(subscription.status.state, "unavailable");
        await until(() => seen.reads.some((r) => r.reason === "start"), 2000, "the first read");
        await server().submitScore(id, { player_id: "js-bob", score: 2 });
        await until(() => seen.reads.find((r) => r.reason === "poll" && r.players.includes("js-bob")), 3000, "a poll with bob");
        assert.equal(seen.errors.length, 1, "said once");
      } finally {
        await live.close();
      }
    });
  });

  test("no global WebSocket, the ws package's passed in (liveOptions.WebSocket): live updates come", async () => {
    await withoutGlobalWebSocket(async () => {
      const { id, live, subscription, seen } = await follow({ liveOptions: { WebSocket: WsWebSocket } });
      try {
        await until(() => seen.reads.some((r) => r.reason === "subscribed"), 10_000, "the subscription");
        assert.equal(subscription.status.state, "live");
        assert.ok(live.live().socket instanceof WsWebSocket);
        await server().submitScore(id, { player_id: "js-bob", score: 2 });
        const update = await until(() => seen.updates.find((m) => m.top.some((e) => e.player_id === "js-bob")), 10_000, "bob over the socket");
        assert.deepEqual(update.top.map((e) => e.player_id), ["js-bob", "js-ada"]);
        assert.deepEqual(seen.errors, []);
      } finally {
        await live.close();
      }
    });
  });
});
