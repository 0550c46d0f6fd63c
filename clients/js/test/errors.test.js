// Each error the API answers as its typed exception, and the retries on 429 and 503.
import assert from "node:assert/strict";
import net from "node:net";
import { describe, test } from "node:test";

import {
  BadRequest,
  Conflict,
  Forbidden,
  LeaderboardError,
  NetworkError,
  NotFound,
  PayloadTooLarge,
  RateLimited,
  Unauthorized,
  Unavailable,
  Unprocessable,
} from "../dist/leaderboard.js";
import { boardId, client, noStack, token } from "./helpers.js";

/** Asserts `promise` rejects with an instance of `Type` (a LeaderboardError) and returns it. */
async function rejection(promise, Type) {
  try {
    await promise;
  } catch (error) {
    assert.ok(error instanceof Type, `expected ${Type.name}, got ${error?.name}: ${error?.message}`);
    assert.ok(error instanceof LeaderboardError);
    assert.equal(error.name, Type.name);
    return error;
  }
  assert.fail(`expected ${Type.name}, nothing was thrown`);
}

describe("errors", { skip: noStack }, () => {
  const admin = () => client({ token: token("admin") });
  const server = (options = {}) => client({ token: token("server"), ...options });

  test("400 BadRequest, with the field", async () => {
    const id = boardId();
    await admin().putBoard(id, {});
    const error = await rejection(client().entries(id, { limit: 1000 }), BadRequest);
    assert.equal(error.status, 400);
    assert.equal(error.code, "bad_request");
    assert.equal(error.field, "limit");
    assert.equal(error.body.message, error.message);
  });

  test("401 Unauthorized: the gateway's (only a message) and a read's", async () => {
    const gateway = await rejection(client({ token: "not-a-token" }).putBoard(boardId(), {}), Unauthorized);
    assert.equal(gateway.status, 401);
    assert.equal(gateway.body.message, "Unauthorized");
    await rejection(client({ token: "not-a-token" }).listBoards(), Unauthorized);
    await rejection(client().putBoard(boardId(), {}), Unauthorized);
  });

  test("403 Forbidden: no admin scope; a player submitting for another", async () => {
    const scope = await rejection(client({ token: token("js-ada") }).putBoard(boardId(), {}), Forbidden);
    assert.equal(scope.status, 403);
    const id = boardId();
    await admin().putBoard(id, {});
    const other = await rejection(
      client({ token: token("js-ada") }).submitScore(id, { player_id: "js-bob", score: 1 }),
      Forbidden,
    );
    assert.equal(other.code, "forbidden");
  });

  test("404 NotFound", async () => {
    const error = await rejection(client().getBoard(boardId("missing")), NotFound);
    assert.equal(error.status, 404);
    assert.equal(error.code, "not_found");
  });

  test("409 Conflict: an idempotency key reused with another body", async () => {
    const id = boardId();
    await admin().putBoard(id, {});
    const first = await server().submitScore(id, { player_id: "js-ada", score: 1 });
    const error = await rejection(
      server().submitScore(id, { player_id: "js-ada", score: 2 }, { idempotencyKey: first.idempotency_key }),
      Conflict,
    );
    assert.equal(error.status, 409);
    assert.equal(error.code, "conflict");
  });

  test("413 PayloadTooLarge", async () => {
    const id = boardId();
    await admin().putBoard(id, {});
    const metadata = { name: "x".repeat(17_000) };
    const error = await rejection(server().submitScore(id, { player_id: "js-ada", score: 1, metadata }), PayloadTooLarge);
    assert.equal(error.status, 413);
    assert.equal(error.code, "payload_too_large");
  });

  test("422 Unprocessable: the board's rules, and its validation hook", async () => {
    const id = boardId();
    await admin().putBoard(id, { regions: ["EU"], validation_hook: { target: "no_negative" } });
    const region = await rejection(server().submitScore(id, { player_id: "js-ada", score: 1, region: "NA" }), Unprocessable);
    assert.equal(region.code, "unprocessable");
    assert.equal(region.field, "region");
    const hook = await rejection(server().submitScore(id, { player_id: "js-ada", score: -1 }), Unprocessable);
    assert.equal(hook.code, "rejected_by_hook");
  });

  test("429 RateLimited with Retry-After, when no retry is left", async () => {
    const id = boardId();
    await admin().putBoard(id, { rate_limit_per_minute: 1 });
    const limited = server({ retries: 0 });
    await limited.submitScore(id, { player_id: "js-ada", score: 1 });
    const error = await rejection(limited.submitScore(id, { player_id: "js-ada", score: 2 }), RateLimited);
    assert.equal(error.status, 429);
    assert.equal(error.code, "rate_limited");
    assert.ok(error.retryAfter >= 1, `Retry-After: ${error.retryAfter}`);
  });

  test("429 is retried after Retry-After, then succeeds", async () => {
    const id = boardId();
    // A bucket of 60 refilled at one a second: a batch of 60 empties it.
    await admin().putBoard(id, { mode: "increment", rate_limit_per_minute: 60 });
    const burst = Array.from({ length: 60 }, () => ({ player_id: "js-ada", score: 1 }));
    const emptied = await server().submitBatch(id, burst);
    assert.ok(emptied.results.every((r) => r.status === 200));
    const retries = [];
    const patient = server({ onRetry: (info) => retries.push(info) });
    const started = Date.now();
    const second = await patient.submitScore(id, { player_id: "js-ada", score: 2 });
    assert.equal(second.applied, true);
    assert.ok(retries.length >= 1, "no retry");
    assert.ok(retries[0].error instanceof RateLimited);
    assert.ok(retries[0].delayMs >= 1000, `waited ${retries[0].delayMs} ms, Retry-After says 1 s`);
    assert.ok(Date.now() - started >= 1000);
  });

  test("503 Unavailable: retried with backoff, then thrown (a hook that fails closed)", async () => {
    const id = boardId();
    await admin().putBoard(id, { validation_hook: { target: "broken", on_failure: "closed" } });
    const retries = [];
    const keys = new Set();
    const retrying = server({
      retries: 2,
      maxRetryAfterMs: 5000,
      onRetry: (info) => retries.push(info),
      fetch: (url, init) => {
        keys.add(new Headers(init.headers).get("idempotency-key"));
        return fetch(url, init);
      },
    });
    const error = await rejection(retrying.submitScore(id, { player_id: "js-ada", score: 1 }), Unavailable);
    assert.equal(error.status, 503);
    assert.equal(error.code, "hook_unavailable");
    assert.ok(error.retryAfter >= 1);
    assert.equal(retries.length, 2);
    assert.ok(retries.every((r) => r.error instanceof Unavailable));
    assert.equal(keys.size, 1, "every attempt carries the same idempotency key");
  });

  test("no answer: NetworkError, status 0", async () => {
    const closed = await new Promise((resolve) => {
      const probe = net.createServer().listen(0, "127.0.0.1", () => {
        const { port } = probe.address();
        probe.close(() => resolve(port));
      });
    });
    const error = await rejection(
      client({ baseUrl: `http://127.0.0.1:${closed}`, retries: 1 }).getBoard("x"),
      NetworkError,
    );
    assert.equal(error.status, 0);
  });
});
