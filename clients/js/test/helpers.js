// What the tests share: the stack they run against (from the environment that
// tests/clients/test_js_client.py sets after starting `make run`), clients, waiting.
import assert from "node:assert/strict";
import { createServer } from "node:net";

import { LeaderboardClient } from "../dist/leaderboard.js";

export const env = {
  api: process.env.LEADERBOARD_API_URL,
  live: process.env.LEADERBOARD_LIVE_REALTIME_URL
    ? {
        realtimeUrl: process.env.LEADERBOARD_LIVE_REALTIME_URL,
        httpHost: process.env.LEADERBOARD_LIVE_HTTP_HOST,
        apiKey: process.env.LEADERBOARD_LIVE_API_KEY,
      }
    : undefined,
  // {"admin": ..., "server": ..., "player": ..., "<player id>": <that player's token>, ...}
  tokens: JSON.parse(process.env.LEADERBOARD_TOKENS || "{}"),
};

/** `skip` for node:test when no stack was named. */
export const noStack = env.api ? false : "no stack: set LEADERBOARD_API_URL (make test does)";

export function token(who) {
  const value = env.tokens[who];
  if (!value) throw new Error(`no token for ${who} in LEADERBOARD_TOKENS`);
  return value;
}

export function client(options = {}) {
  return new LeaderboardClient({ baseUrl: env.api, live: env.live, backoffBaseMs: 50, ...options });
}

let counter = 0;
/** A board id of its own for each test. */
export function boardId(prefix = "js") {
  counter += 1;
  return `${prefix}-${Date.now().toString(36)}-${process.pid.toString(36)}-${counter}`;
}

/** Waits until `check()` returns something truthy (polled), or fails after `ms`. */
export async function until(check, ms = 10_000, what = "condition") {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Runs `body` with no global WebSocket (as on Node.js 20), putting it back after. */
export async function withoutGlobalWebSocket(body) {
  const saved = Object.getOwnPropertyDescriptor(globalThis, "WebSocket");
  delete globalThis.WebSocket;
  try {
    assert.equal(typeof globalThis.WebSocket, "undefined");
    return await body();
  } finally {
    if (saved) Object.defineProperty(globalThis, "WebSocket", saved);
  }
}

/** A local port nobody listens on (it was free a moment ago). */
export async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}
