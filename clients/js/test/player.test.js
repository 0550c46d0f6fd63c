// Player channels (docs/API.md "Player channels"): PUT and DELETE .../watch, and a player
// subscription that reads the player once when it misses a message, and carries on after a
// reconnect (watching again).
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Forbidden } from "../dist/leaderboard.js";
import { boardId, client, env, noStack, token, until } from "./helpers.js";

describe("player channels", { skip: noStack || (!env.live && "no live endpoint") }, () => {
  const admin = () => client({ token: token("admin") });
  const server = () => client({ token: token("server") });

  test("PUT and DELETE /boards/{id}/players/{player_id}/watch", async () => {
    const id = boardId();
    await admin().putBoard(id, { mode: "best", periods: ["all-time", "weekly"] });
    const ada = client({ token: token("js-ada") });
    const watch = await ada.watch(id, "js-ada", { period: "weekly", top_n: 3, friends: ["js-bob"], ttl_seconds: 120 });
    assert.equal(watch.board_id, id);
    assert.equal(watch.player_id, "js-ada");
    assert.equal(watch.period_kind, "weekly");
    assert.deepEqual(watch.friends, ["js-bob"]);
    assert.match(watch.channel, /^\/players\/P[0-9a-f]{40}$/);
    assert.equal(watch.rank, null);
    // A renewal without friends keeps them.
    const renewed = await ada.watch(id, "js-ada", { period: "weekly", top_n: 3 });
    assert.deepEqual(renewed.friends, ["js-bob"]);
    await assert.rejects(ada.watch(id, "js-bob", {}), Forbidden);
    await ada.unwatch(id, "js-ada", { period: "weekly" });
    await ada.unwatch(id, "js-ada", { period: "weekly" }); // 204 also when there is none
  });

  test("a player subscription: passed by a friend, a gap read once, a reconnect", async () => {
    const id = boardId();
    await admin().putBoard(id, { mode: "best" });
    const seen = { messages: [], standings: [], watches: [], errors: [] };
    let dropNext = false;
    const dropped = [];
    const ada = client({
      token: token("js-ada"),
      liveOptions: {
        backoffMinMs: 100,
        backoffMaxMs: 400,
        hooks: {
          dropFrame: (frame) => {
            if (!dropNext || frame.type !== "data") return false;
            dropNext = false;
            dropped.push(JSON.parse(frame.event));
            return true;
          },
        },
      },
    });
    const subscription = ada.subscribePlayer({
      boardId: id,
      playerId: "js-ada",
      topN: 3,
      friends: ["js-bob"],
      onMessage: (message, info) => seen.messages.push({ message, gap: info.gap }),
      onStanding: (standing) => seen.standings.push(standing),
      onWatch: (watch) => seen.watches.push(watch),
      onError: (error) => seen.errors.push(error),
    });
    const submit = (player, score) => server().submitScore(id, { player_id: player, score });
    const messageWith = (rank) => () => seen.messages.find((m) => m.message.rank === rank);
    try {
      await until(() => {
        if (seen.errors.length) throw seen.errors[0]; // the watch refused: say why
        return subscription.status.state === "live";
      }, 10_000, "the subscription");
      assert.match(subscription.channel, /^\/players\/P[0-9a-f]{40}$/);
      assert.equal(subscription.rank, null);

      await submit("js-ada", 100);
      const entered = await until(messageWith(1), 10_000, "ada entering the top");
      assert.deepEqual(entered.message.events, ["entered_top"]);
      assert.equal(entered.gap, false);

      await submit("js-bob", 200);
      const passed = await until(messageWith(2), 10_000, "bob passing ada");
      assert.deepEqual(passed.message.events.slice().sort(), ["friend_passed", "passed"]);
      assert.deepEqual(passed.message.passed_by.map((p) => [p.player_id, p.friend]), [["js-bob", true]]);
      assert.equal(passed.gap, false);

      // Lost: cy passes ada (rank 3). Then dee (rank 4): previous_rank 3 is not the 2 last seen.
      dropNext = true;
      await submit("js-cy", 300);
      await until(() => dropped.length === 1, 10_000, "the dropped message");
      assert.equal(dropped[0].rank, 3);
      await submit("js-dee", 400);
      const afterGap = await until(messageWith(4), 10_000, "the message after the gap");
      assert.equal(afterGap.gap, true);
      assert.equal(subscription.gaps, 1);
      assert.deepEqual(seen.standings.map((s) => s && s.rank), [4], "the player read exactly once");

      // A reconnect: the connection comes back, the client watches again and goes on.
      const connection = ada.live();
      const watchesBefore = subscription.watches;
      connection.socket.close();
      await until(() => connection.connections === 2 && subscription.watches > watchesBefore, 10_000, "watch after reconnect");
      await until(() => subscription.status.state === "live", 10_000, "live again");
      assert.equal(subscription.rank, 4);
      await submit("js-eve", 500);
      const next = await until(messageWith(5), 10_000, "a message after the reconnect");
      assert.equal(next.gap, false);
      assert.equal(subscription.gaps, 1);
      assert.deepEqual(seen.errors, []);
    } finally {
      await ada.close();
    }
    // Closing ended the watch: ada's next change publishes nothing (nothing to assert on a
    // silence here), and a new watch starts from scratch.
  });
});
