// Every route of docs/API.md "Routes at a glance" through the client, against the stack.
import assert from "node:assert/strict";
import { describe, test } from "node:test";

import { Conflict, NotFound } from "../dist/leaderboard.js";
import { boardId, client, noStack, token, until } from "./helpers.js";

describe("routes", { skip: noStack }, () => {
  const admin = () => client({ token: token("admin") });
  const server = () => client({ token: token("server") });

  test("GET /health", async () => {
    const health = await client().health();
    assert.equal(health.status, "ok");
    assert.deepEqual(health.unreachable, []);
  });

  test("PUT /boards/{id} creates then updates; GET /boards/{id}; GET /boards", async () => {
    const id = boardId();
    const created = await admin().putBoard(id, { title: "JS", mode: "best", regions: ["EU"] });
    assert.equal(created.created, true);
    assert.equal(created.board.board_id, id);
    assert.match(created.board.live_channel, /^\/leaderboards\//);
    const updated = await admin().putBoard(id, { title: "JS 2" });
    assert.equal(updated.created, false);
    assert.equal(updated.board.title, "JS 2");
    assert.equal((await client().getBoard(id)).title, "JS 2");
    const boards = await client().listBoards();
    assert.ok(boards.some((b) => b.board_id === id));
  });

  test("POST scores (idempotent replay), GET entries, player, around, players?ids=, standings, history, periods", async () => {
    const id = boardId();
    await admin().putBoard(id, { mode: "best", periods: ["all-time", "weekly"], regions: ["EU"] });
    const ada = client({ token: token("js-ada") });
    const first = await ada.submitScore(id, { score: 120, region: "EU", metadata: { name: "Ada" } });
    assert.equal(first.player_id, "js-ada");
    assert.equal(first.applied, true);
    assert.equal(first.replayed, false);
    assert.match(first.idempotency_key, /^[0-9a-f-]{36}$/);
    assert.equal(first.standings[0].rank, 1);
    // The same key and body again: the first answer, replayed.
    const again = await ada.submitScore(
      id,
      { score: 120, region: "EU", metadata: { name: "Ada" } },
      { idempotencyKey: first.idempotency_key },
    );
    assert.equal(again.replayed, true);
    assert.equal(again.event_id, first.event_id);
    assert.equal(again.version, first.version);
    await server().submitScore(id, { player_id: "js-bob", score: 95 });
    await server().submitScore(id, { player_id: "js-cy", score: 150 });

    const page = await client().entries(id, { limit: 2 });
    assert.equal(page.total, 3);
    assert.deepEqual(page.entries.map((e) => e.player_id), ["js-cy", "js-ada"]);
    const second = await client().entries(id, { limit: 1, offset: 2 });
    assert.deepEqual(second.entries.map((e) => e.player_id), ["js-bob"]);
    const window = await client().entries(id, { around_rank: 2, limit: 1 });
    assert.deepEqual(window.entries.map((e) => e.rank), [2]);
    const regional = await client().entries(id, { region: "EU", period: "weekly" });
    assert.deepEqual(regional.entries.map((e) => e.player_id), ["js-ada"]);

    const one = await client().player(id, "js-ada");
    assert.equal(one.rank, 2);
    assert.deepEqual(one.metadata, { name: "Ada" });
    const around = await client().around(id, "js-bob", { count: 2 });
    assert.equal(around.player.player_id, "js-bob");
    assert.deepEqual(around.entries.map((e) => e.player_id), ["js-ada", "js-bob"]);
    const some = await client().players(id, ["js-bob", "js-ada", "js-nobody"]);
    assert.deepEqual(some.entries.map((e) => e.player_id), ["js-ada", "js-bob"]);
    assert.deepEqual(some.missing, ["js-nobody"]);
    const standings = await client().standings(id, "js-ada");
    assert.deepEqual(
      standings.standings.map((s) => [s.kind, s.region]),
      [["all-time", null], ["weekly", null], ["all-time", "EU"], ["weekly", "EU"]],
    );
    const history = await client().history(id, "js-ada", { kind: "weekly" });
    assert.deepEqual(history.results, []);
    assert.equal(history.next, null);
    const periods = await client().listPeriods(id);
    assert.deepEqual(periods.periods.map((p) => p.kind), ["all-time", "weekly"]);
  });

  test("POST scores/batch gives every item a key: the same items again are replays", async () => {
    const id = boardId();
    await admin().putBoard(id, { mode: "increment" });
    const items = [
      { player_id: "js-ada", score: 5, idempotency_key: "match-1-ada" },
      { player_id: "js-bob", score: 7 },
    ];
    const result = await server().submitBatch(id, items);
    assert.deepEqual(result.results.map((r) => [r.status, r.replayed]), [[200, false], [200, false]]);
    const replay = await server().submitBatch(id, [items[0]]);
    assert.deepEqual(replay.results.map((r) => [r.status, r.replayed]), [[200, true]]);
    assert.equal((await client().player(id, "js-ada")).score, 5);
  });

  test("DELETE /boards/{id}/players/{player_id}", async () => {
    const id = boardId();
    await admin().putBoard(id, {});
    await server().submitScore(id, { player_id: "js-ada", score: 1 });
    await admin().deletePlayer(id, "js-ada");
    await assert.rejects(client().player(id, "js-ada"), NotFound);
  });

  test("hidden players: PUT, GET, DELETE /boards/{id}/hidden/...", async () => {
    const id = boardId();
    await admin().putBoard(id, {});
    await server().submitScore(id, { player_id: "js-ada", score: 10 });
    await server().submitScore(id, { player_id: "js-bob", score: 5 });
    const hidden = await admin().hidePlayer(id, "js-ada", "test");
    assert.equal(hidden.created, true);
    assert.equal(hidden.hidden, true);
    assert.equal((await admin().hidePlayer(id, "js-ada")).created, false);
    const listed = await admin().hiddenPlayers(id);
    assert.deepEqual(listed.players.map((p) => [p.player_id, p.reason]), [["js-ada", "test"]]);
    assert.deepEqual((await client().entries(id)).entries.map((e) => e.player_id), ["js-bob"]);
    await admin().unhidePlayer(id, "js-ada");
    assert.deepEqual((await client().entries(id)).entries.map((e) => e.player_id), ["js-ada", "js-bob"]);
  });

  test("POST /boards/{id}/rebuild", async () => {
    const id = boardId();
    await admin().putBoard(id, {});
    await server().submitScore(id, { player_id: "js-ada", score: 3 });
    // The persister stores the event within seconds; the rebuild restores what it stored.
    await until(async () => {
      const report = await admin().rebuild(id);
      return report.board_id === id && report.entries >= 1 ? report : null;
    }, 20_000, "a rebuild that finds the entry in PostgreSQL");
    assert.equal((await client().player(id, "js-ada")).score, 3);
  });

  test("GET /boards/{id}/flags", async () => {
    const id = boardId();
    await admin().putBoard(id, { mode: "best", validation_hook: { target: "no_negative" } });
    await server().submitScore(id, { player_id: "js-ada", score: 2_000_000 });
    const page = await until(async () => {
      const flags = await admin().flags(id, { verdict: "flag" });
      return flags.flags.length ? flags : null;
    }, 20_000, "the flagged submission");
    assert.equal(page.flags[0].player_id, "js-ada");
    assert.equal(page.next, null);
  });

  test("tournaments: PUT with tournament, POST join, GET /tournaments", async () => {
    const id = boardId();
    const now = Date.now();
    const iso = (t) => new Date(t).toISOString().replace(/\.\d+Z$/, "Z");
    await admin().putBoard(id, {
      mode: "best",
      tournament: { starts_at: iso(now - 3_600_000), ends_at: iso(now + 86_400_000), join_required: true },
    });
    const joined = await client({ token: token("js-ada") }).join(id);
    assert.deepEqual([joined.player_id, joined.joined, joined.participants], ["js-ada", true, 1]);
    const again = await server().join(id, "js-ada");
    assert.equal(again.joined, false);
    const open = await client().listTournaments("open");
    assert.ok(open.some((t) => t.board_id === id && t.status === "open"));
  });

  test("leagues: a submission's league, GET league, league/players/{id}, league/groups/{id}", async () => {
    const id = boardId();
    const rules = { tiers: ["bronze", "silver", "gold"], group_size: 4, promote: 1, relegate: 1, start_tier: "silver" };
    const { board } = await admin().putBoard(id, {
      mode: "best", periods: ["custom"], schedule: { timezone: "UTC" }, league: rules,
    });
    assert.deepEqual(board.league, { ...rules, inactive: "stay" });
    assert.equal(board.score_tiers, null);
    // Five players: the first four fill silver-1, the fifth opens silver-2.
    const scores = { "js-ada": 50, "js-bob": 40, "js-cy": 30, "js-dee": 20, "js-eve": 10 };
    const places = {};
    for (const [player, score] of Object.entries(scores)) {
      places[player] = (await server().submitScore(id, { player_id: player, score })).league;
    }
    assert.deepEqual(
      Object.values(places).map((p) => [p.tier, p.group_id, p.placed]),
      [["silver", "silver-1", true], ["silver", "silver-1", true], ["silver", "silver-1", true],
        ["silver", "silver-1", true], ["silver", "silver-2", true]],
    );
    const season = places["js-ada"].season;
    const later = (await server().submitScore(id, { player_id: "js-dee", score: 45 })).league;
    assert.deepEqual(later, { season, tier: "silver", group_id: "silver-1", placed: false });

    const overview = await client().league(id);
    assert.equal(overview.board_id, id);
    assert.equal(overview.season.period, season);
    assert.equal(overview.season.status, "open");
    assert.deepEqual(overview.league, board.league);
    assert.deepEqual(overview.tiers, [
      { tier: "bronze", groups: 0, players: 0 },
      { tier: "silver", groups: 2, players: 5 },
      { tier: "gold", groups: 0, players: 0 },
    ]);
    assert.deepEqual(await client().league(id, { season }), overview);

    // My group: the whole group best first, my rank and zone, the lines.
    const mine = await client({ token: token("js-cy") }).leaguePlayer(id, "js-cy");
    assert.deepEqual(
      [mine.player_id, mine.tier, mine.group_id, mine.rank, mine.zone, mine.players],
      ["js-cy", "silver", "silver-1", 4, "relegation", 4],
    );
    assert.deepEqual([mine.promotion_line, mine.relegation_line], [1, 4]);
    assert.deepEqual(
      mine.entries.map((e) => [e.rank, e.player_id, e.score, e.zone]),
      [[1, "js-ada", 50, "promotion"], [2, "js-dee", 45, "safe"], [3, "js-bob", 40, "safe"],
        [4, "js-cy", 30, "relegation"]],
    );
    // The same read as a game server reading for the player, and for a season by id.
    const viewed = await server().leaguePlayer(id, "js-cy", { viewer: "js-cy", season });
    assert.deepEqual(viewed.entries, mine.entries);

    // A group by id: the same body without the player's own fields.
    const group = await client().leagueGroup(id, "silver-1");
    assert.deepEqual(group.entries, mine.entries);
    assert.equal(group.player_id, undefined);
    const second = await client().leagueGroup(id, "silver-2", { season });
    assert.deepEqual(second.entries.map((e) => e.player_id), ["js-eve"]);
    await assert.rejects(client().leagueGroup(id, "silver-3"), NotFound);

    // A player in no group yet: the tier they would start in, no group.
    const nobody = await client().leaguePlayer(id, "js-nobody");
    assert.deepEqual(
      [nobody.tier, nobody.group_id, nobody.rank, nobody.zone, nobody.entries],
      ["silver", null, null, null, []],
    );
    // A board that is no league: 409.
    const plain = boardId();
    await admin().putBoard(plain, { mode: "best" });
    await assert.rejects(client().league(plain), Conflict);
  });

  test("score tiers: the board's score_tiers, and tier on every standing read", async () => {
    const id = boardId();
    const tiers = { by: "score", tiers: [{ name: "gold", score: 100 }, { name: "silver", score: 50 }, { name: "bronze" }] };
    const { board } = await admin().putBoard(id, { mode: "best", periods: ["all-time", "weekly"], score_tiers: tiers });
    assert.deepEqual(board.score_tiers, tiers);
    assert.equal(board.league, null);
    for (const [player, score] of [["js-ada", 120], ["js-bob", 50], ["js-cy", 49.5]]) {
      await server().submitScore(id, { player_id: player, score });
    }
    const page = await client().entries(id);
    assert.deepEqual(page.entries.map((e) => [e.player_id, e.tier]),
      [["js-ada", "gold"], ["js-bob", "silver"], ["js-cy", "bronze"]]);
    assert.equal((await client().player(id, "js-bob")).tier, "silver");
    const around = await client().around(id, "js-cy", { count: 2 });
    assert.deepEqual([around.player.tier, ...around.entries.map((e) => e.tier)], ["bronze", "silver", "bronze"]);
    const chosen = await client().players(id, ["js-cy", "js-ada"]);
    assert.deepEqual(chosen.entries.map((e) => e.tier), ["gold", "bronze"]);
    const standings = await client().standings(id, "js-ada");
    assert.deepEqual(standings.standings.map((s) => s.tier), ["gold", "gold"]);

    // A board without score tiers has no tier anywhere.
    const plain = boardId();
    await admin().putBoard(plain, { mode: "best" });
    await server().submitScore(plain, { player_id: "js-ada", score: 120 });
    const untiered = await client().entries(plain);
    assert.equal("tier" in untiered.entries[0], false);
    assert.equal("tier" in (await client().player(plain, "js-ada")), false);
  });

  test("POST /boards/{id}/periods/end", async () => {
    const id = boardId();
    await admin().putBoard(id, { periods: ["all-time", "custom"], schedule: { timezone: "UTC" } });
    await new Promise((resolve) => setTimeout(resolve, 1100)); // a period lasts a second at least
    const ended = await admin().endPeriod(id);
    assert.equal(ended.board_id, id);
    assert.equal(ended.ended.kind, "custom");
    assert.equal(ended.current.status, "open");
  });
});
