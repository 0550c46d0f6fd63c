// Board channels: updates in order, a reconnect (the socket force-closed) after which the
// subscription carries on, and a gap (one data frame dropped) that costs exactly one read.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { boardId, client, env, noStack, token, until } from "./helpers.js";

describe("live board channels", { skip: noStack || (!env.live && "no live endpoint") }, () => {
  const admin = () => client({ token: token("admin") });
  const server = () => client({ token: token("server") });

  /** A client following `id`'s all-time channel, recording what it is told. */
  async function follow(id, liveOptions = {}) {
    const seen = { updates: [], snapshots: [], statuses: [], errors: [] };
    const live = client({ liveOptions: { backoffMinMs: 100, backoffMaxMs: 400, ...liveOptions } });
    const subscription = live.subscribeBoard({
      boardId: id,
      periodKind: "all-time",
      onUpdate: (message, info) => seen.updates.push({ message, gap: info.gap }),
      onSnapshot: (page, reason) => seen.snapshots.push({ page, reason }),
      onStatus: (status) => seen.statuses.push(status.state),
      onError: (error) => seen.errors.push(error),
    });
    await until(() => seen.snapshots.some((s) => s.reason === "subscribed"), 10_000, "the subscription");
    return { live, subscription, seen };
  }

  const scoreOf = (message, player) => message.top.find((e) => e.player_id === player)?.score;
  const updateWith = (seen, player, score) => () =>
    seen.updates.find((u) => scoreOf(u.message, player) === score);

  test("messages follow each other, each with the whole top", async () => {
    const id = boardId();
    await admin().putBoard(id, { mode: "best", live_top: 5 });
    const { live, subscription, seen } = await follow(id);
    try {
      assert.equal(subscription.channel, `/leaderboards/${id}/all-time`);
      assert.equal(subscription.status.state, "live");
      assert.deepEqual(seen.snapshots[0].page.entries, []);
      await server().submitScore(id, { player_id: "js-ada", score: 10 });
      await until(updateWith(seen, "js-ada", 10), 10_000, "ada's score over the socket");
      await server().submitScore(id, { player_id: "js-bob", score: 20 });
      const update = await until(updateWith(seen, "js-bob", 20), 10_000, "bob's score");
      assert.deepEqual(update.message.top.map((e) => e.player_id), ["js-bob", "js-ada"]);
      assert.ok(seen.updates.every((u) => !u.gap));
      assert.equal(subscription.gaps, 0);
    } finally {
      await live.close();
    }
  });

  test("a reconnect: the socket closed under it, the client reconnects, resubscribes, reads once and goes on", async () => {
    const id = boardId();
    await admin().putBoard(id, { mode: "best" });
    const { live, subscription, seen } = await follow(id);
    try {
      await server().submitScore(id, { player_id: "js-ada", score: 1 });
      await until(updateWith(seen, "js-ada", 1), 10_000, "the first update");
      const connection = live.live();
      assert.equal(connection.connections, 1);
      const before = connection.socket;
      before.close(); // as a network failure would
      await until(() => connection.connections === 2, 10_000, "the reconnect");
      assert.notEqual(connection.socket, before);
      await until(() => subscription.subscriptions === 2, 10_000, "the resubscription");
      await until(() => seen.snapshots.filter((s) => s.reason === "subscribed").length === 2, 10_000, "the read after it");
      assert.ok(seen.statuses.includes("waiting"), `statuses: ${seen.statuses}`);
      assert.equal(subscription.status.state, "live");
      await server().submitScore(id, { player_id: "js-bob", score: 2 });
      await until(updateWith(seen, "js-bob", 2), 10_000, "an update after the reconnect");
      assert.equal(subscription.gaps, 0, "the read after the reconnect is no gap");
    } finally {
      await live.close();
    }
  });

  test("a gap: one data frame lost, exactly one read, then it goes on", async () => {
    const id = boardId();
    await admin().putBoard(id, { mode: "best" });
    let dropNext = false;
    const dropped = [];
    const { live, subscription, seen } = await follow(id, {
      hooks: {
        dropFrame: (frame) => {
          if (!dropNext || frame.type !== "data") return false;
          dropNext = false;
          dropped.push(JSON.parse(frame.event));
          return true;
        },
      },
    });
    try {
      await server().submitScore(id, { player_id: "js-ada", score: 1 });
      await until(updateWith(seen, "js-ada", 1), 10_000, "the first update");
      dropNext = true;
      await server().submitScore(id, { player_id: "js-bob", score: 2 });
      await until(() => dropped.length === 1, 10_000, "the dropped frame");
      assert.equal(scoreOf(dropped[0], "js-bob"), 2);
      const readsBefore = seen.snapshots.length;
      await server().submitScore(id, { player_id: "js-cy", score: 3 });
      const afterGap = await until(updateWith(seen, "js-cy", 3), 10_000, "the update after the gap");
      assert.equal(afterGap.gap, true);
      const reads = seen.snapshots.slice(readsBefore);
      assert.deepEqual(reads.map((r) => r.reason), ["gap"], "exactly one read for the gap");
      // The read covers what the lost message said.
      assert.deepEqual(reads[0].page.entries.map((e) => e.player_id).slice(-2), ["js-bob", "js-ada"]);
      await server().submitScore(id, { player_id: "js-dee", score: 4 });
      const next = await until(updateWith(seen, "js-dee", 4), 10_000, "the update after that");
      assert.equal(next.gap, false);
      assert.equal(subscription.gaps, 1);
      assert.equal(seen.snapshots.length, readsBefore + 1, "no other read");
      assert.deepEqual(seen.errors, []);
    } finally {
      await live.close();
    }
  });
});
