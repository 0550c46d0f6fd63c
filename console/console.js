// The operator console (issue 41): boards, players, moderation and tournaments of the leaderboard
// service, for an admin. Plain ES module, no build step, no framework, no other origin than the
// API's and the live endpoint's. Every call to the service and the live subscription go through
// the JS client (clients/js), which is served beside this page under ./client/.
//
// The admin token is kept in this tab's sessionStorage only: never localStorage, a cookie or the
// URL (a token handed back in the URL fragment by a sign-in page is read and removed at once).
import {
  BadRequest,
  Forbidden,
  LeaderboardClient,
  LeaderboardError,
  NetworkError,
  NotFound,
  Unauthorized,
} from "./client/leaderboard.js";

const TOKEN_KEY = "leaderboard-console.admin-token";
const RETURN_KEY = "leaderboard-console.return";
const ADMIN_SCOPE = "leaderboard/admin";
const SERVER_SCOPE = "leaderboard/server";
// The sign-in check: an admin-only read (GET /boards/{id}/hidden). The authorizer answers 401 or
// 403 before the function runs; an admin gets the board's hidden players, or 404 when no board
// has this id. Nothing is written.
const CHECK_BOARD = "console-sign-in-check";
// Pages: never more than 100 of anything per request, whatever the board's size.
const BOARDS_PAGE = 20;
const PERIODS_PAGE = 20;
const ENTRIES_PAGE = 50;
const HISTORY_PAGE = 20;
const FLAGS_PAGE = 50;
const HIDDEN_PAGE = 100;
const TOURNAMENTS_PAGE = 20;
const AROUND_COUNT = 11;
const PERIOD_KINDS = ["all-time", "daily", "weekly", "monthly", "custom"];

// ---- small helpers ------------------------------------------------------------------------

/** An element: attributes (`text`, `class`, `on<event>`, `dataset`, others as attributes;
 *  null, undefined and false are left out), then children (text goes in as text, never HTML). */
function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "text") node.textContent = String(value);
    else if (key === "class") node.className = value;
    else if (key === "dataset") Object.assign(node.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

const $ = (id) => document.getElementById(id);
const enc = encodeURIComponent;

function storage() {
  try {
    return window.sessionStorage;
  } catch {
    return null; // storage disabled: the token lives in this page's memory only
  }
}

function fmtNumber(value) {
  if (value === null || value === undefined) return "–";
  return typeof value === "number" ? value.toLocaleString("en-US") : String(value);
}

function fmtTime(iso) {
  if (!iso) return "–";
  return String(iso).replace("T", " ").replace(/(\.\d+)?Z$/, " UTC");
}

function displayName(metadata) {
  if (!metadata || typeof metadata !== "object") return "";
  const name = metadata.name;
  return name === undefined || name === null ? "" : String(name);
}

/** JSON with object keys sorted and null members left out: equal rules compare equal. */
function stable(value) {
  if (Array.isArray(value)) return `[${value.map(stable).join(",")}]`;
  if (value && typeof value === "object") {
    const keys = Object.keys(value).filter((k) => value[k] !== null && value[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stable(value[k])}`).join(",")}}`;
  }
  return JSON.stringify(value === undefined ? null : value);
}

/** A hash link: `#/boards/a/players/b`, each segment encoded, and an optional query. */
function link(segments, query) {
  const path = segments.map((s) => enc(String(s))).join("/");
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") params.set(key, String(value));
  }
  const text = params.toString();
  return `#/${path}${text ? `?${text}` : ""}`;
}

/** The payload of a JWT, to word messages only (the service decides what a token may do). */
function decodeClaims(token) {
  const parts = String(token || "").split(".");
  if (parts.length !== 3) return null;
  try {
    const base64 = parts[1].replace(/-/g, "+").replace(/_/g, "/");
    const padded = base64 + "=".repeat((4 - (base64.length % 4)) % 4);
    const bytes = Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes));
    return claims && typeof claims === "object" && !Array.isArray(claims) ? claims : null;
  } catch {
    return null;
  }
}

function scopesOf(claims) {
  const scope = claims && (typeof claims.scope === "string" ? claims.scope : "");
  return scope ? scope.split(/\s+/).filter(Boolean) : [];
}

/** "a server token (scope leaderboard/server, subject game-server)", for the refusal message. */
function tokenKind(claims) {
  if (!claims) return "not a token the service issues (no readable JWT)";
  const scopes = scopesOf(claims);
  const subject = typeof claims.sub === "string" ? `subject "${claims.sub}"` : "no subject";
  if (scopes.includes(SERVER_SCOPE)) return `a server token (scope ${SERVER_SCOPE}, ${subject})`;
  if (scopes.length === 0) return `a player token (no scope, ${subject})`;
  return `a token with the scopes ${scopes.join(" ")} (${subject})`;
}

// ---- configuration ------------------------------------------------------------------------

/** ./config.json beside the page: {api_url, sign_in_url, sign_in_label, live,
 *  local_admin_token_url}, all optional. Absent (or without api_url): the API is this origin. */
async function loadConfig() {
  let raw = {};
  try {
    const response = await fetch("./config.json", { cache: "no-store", credentials: "same-origin" });
    if (response.ok) raw = await response.json();
  } catch {
    raw = {};
  }
  if (!raw || typeof raw !== "object" || Array.isArray(raw)) raw = {};
  const url = (value) => (typeof value === "string" && /^https?:\/\/[^\s]+$/.test(value) ? value : "");
  const config = {
    apiUrl: url(raw.api_url).replace(/\/+$/, ""),
    signInUrl: url(raw.sign_in_url),
    signInLabel: typeof raw.sign_in_label === "string" ? raw.sign_in_label : "",
    localTokenUrl:
      typeof raw.local_admin_token_url === "string" && /^(https?:\/\/|\/)[^\s]*$/.test(raw.local_admin_token_url)
        ? raw.local_admin_token_url
        : "",
    live: null,
  };
  const live = raw.live;
  if (
    live && typeof live === "object" && typeof live.realtime_url === "string" &&
    /^wss?:\/\//.test(live.realtime_url) && typeof live.http_host === "string" &&
    typeof live.api_key === "string"
  ) {
    config.live = { realtimeUrl: live.realtime_url, httpHost: live.http_host, apiKey: live.api_key };
  }
  if (config.signInUrl && !config.signInLabel) {
    try {
      config.signInLabel = new URL(config.signInUrl).host;
    } catch {
      config.signInLabel = "your identity provider";
    }
  }
  return config;
}

// ---- state --------------------------------------------------------------------------------

const state = {
  config: null,
  client: null,
  token: null, // the admin token, once the service accepted it
  claims: null,
  view: null, // the current view: {seq, cleanups}
  seq: 0,
  boardsCache: null, // GET /boards, for the moderation picker
  cursors: new Map(), // cursor paging: the previous page's cursor of each page seen
};

function readStoredToken() {
  const store = storage();
  return store ? store.getItem(TOKEN_KEY) : null;
}

function storeToken(token) {
  const store = storage();
  if (!store) return;
  if (token) store.setItem(TOKEN_KEY, token);
  else store.removeItem(TOKEN_KEY);
}

// ---- flash messages, errors ----------------------------------------------------------------

let flashedAt = 0;

/** A message above the view; it survives the navigation that follows it at once (saved, then
 *  shown the board), and is cleared by the next one. */
function flash(text, kind = "ok") {
  flashedAt = Date.now();
  const box = $("flash");
  box.replaceChildren(h("p", { class: kind === "ok" ? "" : "err", "data-kind": kind, text }));
}

function clearFlash() {
  $("flash").replaceChildren();
}

/** What an error says to a person: the service's message, with its status. */
function errorText(error) {
  if (error instanceof NetworkError) return `No answer from the service (${error.message}).`;
  if (error instanceof LeaderboardError) {
    const message = error.body && error.body.message ? String(error.body.message) : error.message;
    return `${error.status}: ${message}`;
  }
  return String((error && error.message) || error);
}

/** A call's error, after which the session may be over: a 401 means the token stopped working
 *  (expired), a 403 on an admin route that it is no admin token. Both sign out, saying why. */
function sessionEnded(error) {
  if (error instanceof Unauthorized) {
    signOut("The service no longer accepts your token (it may have expired). Sign in again.");
    return true;
  }
  if (error instanceof Forbidden) {
    signOut("The service refused your token on an admin route: it has no admin scope. Sign in with an admin token.");
    return true;
  }
  return false;
}

function showError(box, error) {
  if (sessionEnded(error)) return;
  box.replaceChildren(h("p", { class: "err", text: errorText(error) }));
}

// ---- the confirmation dialog ----------------------------------------------------------------

/** A modal confirmation: resolves true on confirm, false on Cancel or Escape. Focus starts on
 *  Cancel, stays inside the dialog (Tab and Shift+Tab cycle), and goes back where it was. */
function confirmDialog({ title, body, confirmLabel, testid }) {
  const dialog = $("confirm-dialog");
  const ok = $("confirm-ok");
  const cancel = $("confirm-cancel");
  const opener = document.activeElement;
  $("confirm-title").textContent = title;
  $("confirm-body").replaceChildren(...body);
  ok.textContent = confirmLabel;
  dialog.dataset.for = testid || "";
  return new Promise((resolve) => {
    const focusables = () => [...dialog.querySelectorAll("button, a[href], input, select, textarea")]
      .filter((node) => !node.disabled && node.offsetParent !== null);
    const trap = (event) => {
      if (event.key !== "Tab") return;
      const nodes = focusables();
      if (nodes.length === 0) return;
      const first = nodes[0];
      const last = nodes[nodes.length - 1];
      if (event.shiftKey && (document.activeElement === first || !dialog.contains(document.activeElement))) {
        event.preventDefault();
        last.focus();
      } else if (!event.shiftKey && (document.activeElement === last || !dialog.contains(document.activeElement))) {
        event.preventDefault();
        first.focus();
      }
    };
    const finish = (answer) => {
      dialog.removeEventListener("keydown", trap);
      dialog.removeEventListener("cancel", onCancel);
      ok.removeEventListener("click", onOk);
      cancel.removeEventListener("click", onCancelClick);
      if (dialog.open) dialog.close();
      delete dialog.dataset.for;
      if (opener && typeof opener.focus === "function" && document.contains(opener)) opener.focus();
      resolve(answer);
    };
    const onOk = () => finish(true);
    const onCancelClick = () => finish(false);
    const onCancel = (event) => {
      event.preventDefault(); // Escape: closed by finish, focus restored
      finish(false);
    };
    dialog.addEventListener("keydown", trap);
    dialog.addEventListener("cancel", onCancel);
    ok.addEventListener("click", onOk);
    cancel.addEventListener("click", onCancelClick);
    dialog.showModal();
    cancel.focus();
  });
}

// ---- tables and pagers ----------------------------------------------------------------------

/** A table with a caption and column headers; `rows` are arrays of cells (a cell is text, a
 *  node, or {node|text, class}). */
function table({ caption, columns, rows, testid, empty, rowAttrs }) {
  const head = h("tr", {}, columns.map((c) =>
    h("th", { scope: "col", class: c.num ? "num" : null },
      c.label ? c.label : h("span", { class: "sr-only", text: "Action" }))));
  const body = h("tbody", {});
  rows.forEach((cells, index) => {
    const tr = h("tr", rowAttrs ? rowAttrs(index) : {});
    cells.forEach((cell, i) => {
      const cls = columns[i] && columns[i].num ? "num" : null;
      const td = h("td", { class: cls, "data-col": columns[i] && columns[i].key });
      if (cell instanceof Node) td.append(cell);
      else td.textContent = cell === null || cell === undefined ? "" : String(cell);
      tr.append(td);
    });
    body.append(tr);
  });
  const node = h("table", { "data-testid": testid }, h("caption", { text: caption }), h("thead", {}, head), body);
  const wrap = h("div", { class: "scroll" }, node);
  if (rows.length === 0 && empty) wrap.append(h("p", { class: "empty", "data-testid": testid ? `${testid}-empty` : null, text: empty }));
  return wrap;
}

/** Previous / next links (links, so every page is linkable and reachable by keyboard). */
function pager({ info, prev, next, testid, label }) {
  const anchor = (href, text, rel) =>
    h("a", {
      class: "button secondary small",
      href: href || null,
      role: href ? null : "link",
      "aria-disabled": href ? null : "true",
      rel: href ? rel : null,
      "data-testid": `${testid}-${rel}`,
      text,
    });
  return h(
    "nav",
    { class: "pager", "aria-label": label, "data-testid": testid },
    h("span", { class: "info", "data-testid": `${testid}-info`, text: info || "" }),
    anchor(prev, "Previous", "prev"),
    anchor(next, "Next", "next"),
  );
}

function pageInfo(offset, count, total) {
  if (total === 0 || count === 0) return `0 of ${fmtNumber(total)}`;
  return `${fmtNumber(offset + 1)}–${fmtNumber(offset + count)} of ${fmtNumber(total)}`;
}

function intParam(value, fallback, max = Number.MAX_SAFE_INTEGER) {
  const n = Number.parseInt(value ?? "", 10);
  return Number.isFinite(n) && n >= 0 ? Math.min(n, max) : fallback;
}

// ---- the shell: header, navigation, views ----------------------------------------------------

const main = () => $("main");

/** Starts a view: clears the previous one (its live subscription and timers), shows a heading
 *  and returns the view's handle. `alive()` is false once another view started. */
function startView(name, title, section) {
  if (state.view) for (const cleanup of state.view.cleanups) cleanup();
  const seq = ++state.seq;
  const view = { seq, name, cleanups: [], alive: () => state.seq === seq };
  state.view = view;
  const heading = h("h2", { id: "main-heading", tabindex: "-1", "data-testid": "view-title", text: title });
  main().replaceChildren(heading);
  main().dataset.view = name;
  main().dataset.state = "loading";
  document.title = `${title} · Leaderboard console`;
  for (const anchor of document.querySelectorAll("[data-nav]")) {
    if (anchor.dataset.nav === section) anchor.setAttribute("aria-current", "page");
    else anchor.removeAttribute("aria-current");
  }
  return view;
}

function ready(view) {
  if (view.alive()) main().dataset.state = "ready";
}

function focusHeading() {
  const heading = $("main-heading");
  if (heading) heading.focus({ preventScroll: false });
}

function showShell(signedIn) {
  $("nav").hidden = !signedIn;
  $("who").hidden = !signedIn;
  if (signedIn) {
    const claims = state.claims || {};
    const subject = typeof claims.sub === "string" ? claims.sub : "admin";
    $("identity").textContent = `Signed in as ${subject} (admin)`;
    $("identity").title = claims.exp ? `The token expires at ${new Date(claims.exp * 1000).toISOString()}` : "";
  } else {
    $("identity").textContent = "";
  }
}

// ---- sign-in ----------------------------------------------------------------------------------

/** Asks the service whether `token` is an admin token: {ok} or {ok: false, message}. */
async function checkToken(token) {
  const claims = decodeClaims(token);
  try {
    await state.client.hiddenPlayers(CHECK_BOARD, { limit: 1 }, { token, retries: 0 });
  } catch (error) {
    if (error instanceof NotFound) return { ok: true, claims };
    if (error instanceof Forbidden) {
      return {
        ok: false,
        reason: "not-admin",
        message: `This is ${tokenKind(claims)}. The console needs an admin token (scope ${ADMIN_SCOPE}); this one was refused and not kept.`,
      };
    }
    if (error instanceof Unauthorized || error instanceof BadRequest) {
      const expired = claims && typeof claims.exp === "number" && claims.exp * 1000 <= Date.now();
      const what = !claims
        ? "This is not a token the service accepts (not a JWT)"
        : expired
          ? `This token expired at ${new Date(claims.exp * 1000).toISOString()}`
          : "The service refused this token as invalid (its signature, issuer, audience or times)";
      return { ok: false, reason: "invalid", message: `${what}. Sign in with a valid admin token (scope ${ADMIN_SCOPE}).` };
    }
    return { ok: false, reason: "unreachable", message: `Could not check the token with the service: ${errorText(error)}` };
  }
  return { ok: true, claims };
}

/** Checks `token` with the service and, if it is an admin token, keeps it for this tab. */
async function signIn(token, errorBox) {
  token = String(token || "").trim().replace(/^Bearer\s+/i, "");
  errorBox.replaceChildren();
  if (!token) {
    errorBox.replaceChildren(h("p", { class: "err", text: "Paste an admin token first." }));
    return false;
  }
  const busy = main().querySelectorAll("button");
  for (const button of busy) button.disabled = true;
  main().dataset.state = "checking";
  const result = await checkToken(token);
  for (const button of busy) button.disabled = false;
  if (!result.ok) {
    storeToken(null);
    main().dataset.state = "refused";
    errorBox.replaceChildren(h("p", { class: "err", "data-reason": result.reason, text: result.message }));
    return false;
  }
  state.token = token;
  state.claims = result.claims;
  storeToken(token);
  showShell(true);
  const back = storage() && storage().getItem(RETURN_KEY);
  if (back && storage()) storage().removeItem(RETURN_KEY);
  if (back && back.startsWith("#/") && back !== location.hash) location.hash = back;
  else route();
  return true;
}

function signOut(message) {
  storeToken(null);
  state.token = null;
  state.claims = null;
  state.boardsCache = null;
  if (state.view) for (const cleanup of state.view.cleanups) cleanup();
  state.view = null;
  if (state.client) void state.client.close();
  showShell(false);
  if (message) flash(message, "err");
  else flash("Signed out: the token is forgotten.");
  renderSignIn(message || "");
}

function renderSignIn(message) {
  const view = startView("sign-in", "Sign in", "");
  const { config } = state;
  const errorBox = h("div", { id: "sign-in-error", "data-testid": "sign-in-error", class: "error-box", role: "alert" });
  if (message) errorBox.append(h("p", { class: "err", text: message }));
  const choices = h("div", { class: "choices" });
  if (config.signInUrl) {
    choices.append(
      h("a", {
        class: "button",
        href: config.signInUrl,
        id: "sign-in-link",
        "data-testid": "sign-in-link",
        text: `Sign in with ${config.signInLabel}`,
        onclick: () => {
          const store = storage();
          if (store && location.hash.startsWith("#/")) store.setItem(RETURN_KEY, location.hash);
        },
      }),
    );
  }
  if (config.localTokenUrl) {
    choices.append(
      h("button", {
        type: "button",
        id: "local-token",
        "data-testid": "local-token",
        text: "Get a local admin token",
        onclick: async () => {
          errorBox.replaceChildren();
          try {
            // The local stack's own route (devstack/gateway.py), not an API route: plain fetch.
            const response = await fetch(config.localTokenUrl, { method: "POST", cache: "no-store" });
            const body = await response.json();
            if (!response.ok || typeof body.token !== "string") throw new Error(body.message || `HTTP ${response.status}`);
            await signIn(body.token, errorBox);
          } catch (error) {
            errorBox.replaceChildren(h("p", { class: "err", text: `Could not get a local admin token: ${errorText(error)}` }));
          }
        },
      }),
    );
  }
  const input = h("input", {
    id: "token-input",
    "data-testid": "token-input",
    type: "password",
    autocomplete: "off",
    spellcheck: "false",
    "aria-describedby": "token-hint sign-in-error",
  });
  const form = h(
    "form",
    {
      id: "sign-in-form",
      "data-testid": "sign-in-form",
      autocomplete: "off",
      onsubmit: async (event) => {
        event.preventDefault();
        const value = input.value;
        input.value = ""; // not left in the page
        await signIn(value, errorBox);
      },
    },
    h("div", { class: "field" },
      h("label", { for: "token-input", text: "Admin token" }),
      input,
      h("p", {
        class: "hint",
        id: "token-hint",
        text: `A bearer token with the scope ${ADMIN_SCOPE}${config.localTokenUrl ? " (locally: make token prints ADMIN_TOKEN)" : ""}.`,
      }),
    ),
    h("button", { type: "submit", id: "sign-in", "data-testid": "sign-in", text: "Sign in" }),
  );
  main().append(
    h("section", { class: "panel sign-in", "aria-labelledby": "main-heading" },
      h("p", {
        text: "The console needs an admin token of this deployment's issuer. It is checked with the service, " +
          "kept for this tab only (sessionStorage), and forgotten when you sign out or close the tab.",
      }),
      choices.childElementCount ? choices : null,
      choices.childElementCount ? h("p", { class: "or", text: "Or paste a token:" }) : null,
      form,
      errorBox,
    ),
  );
  ready(view);
}

/** A token handed back by a sign-in page in the URL fragment (`#token=...`, or an OAuth
 *  implicit grant's `#access_token=...`): read, then removed from the URL and the history. */
function takeTokenFromUrl() {
  const hash = location.hash;
  if (!hash || hash.startsWith("#/")) return null;
  const params = new URLSearchParams(hash.slice(1));
  const token = params.get("token") || params.get("access_token");
  if (!token) return null;
  const store = storage();
  const back = store && store.getItem(RETURN_KEY);
  if (back && store) store.removeItem(RETURN_KEY);
  history.replaceState(null, "", `${location.pathname}${location.search}${back && back.startsWith("#/") ? back : "#/boards"}`);
  return token;
}

// ---- routing ----------------------------------------------------------------------------------

function parseHash() {
  const raw = location.hash.startsWith("#/") ? location.hash.slice(2) : "";
  const [path, query = ""] = raw.split("?");
  const segments = path.split("/").filter(Boolean).map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      return s;
    }
  });
  return { segments, query: Object.fromEntries(new URLSearchParams(query)) };
}

function route() {
  if (location.hash && !location.hash.startsWith("#/")) return; // an in-page anchor
  if (!state.token) {
    renderSignIn("");
    return;
  }
  const { segments, query } = parseHash();
  const [first, id, sub, item] = segments;
  let run;
  if (!first) {
    history.replaceState(null, "", "#/boards");
    run = () => boardsView(query);
  } else if (first === "boards" && !id) run = () => boardsView(query);
  else if (first === "boards" && id === "new" && !sub) run = () => boardFormView(null);
  else if (first === "boards" && !sub) run = () => boardView(id, query);
  else if (first === "boards" && sub === "edit") run = () => boardFormView(id);
  else if (first === "boards" && sub === "periods" && item) run = () => periodView(id, item, query);
  else if (first === "boards" && sub === "players" && item) run = () => playerView(id, item, query);
  else if (first === "moderation" && !id) run = () => moderationIndexView();
  else if (first === "moderation") run = () => moderationView(id, query);
  else if (first === "tournaments" && !id) run = () => tournamentsView(query);
  else if (first === "tournaments") run = () => tournamentView(id, query);
  else run = () => notFoundView();
  Promise.resolve(run()).catch((error) => {
    if (sessionEnded(error)) return;
    const box = h("div", { class: "error-box", role: "alert", "data-testid": "view-error" });
    box.append(h("p", { class: "err", text: errorText(error) }));
    main().append(box);
    main().dataset.state = "error";
  });
  focusHeading();
}

function notFoundView() {
  const view = startView("not-found", "Nothing here", "");
  main().append(h("p", {}, "No such page. ", h("a", { href: "#/boards", text: "Go to the boards" }), "."));
  ready(view);
}

// ---- boards -------------------------------------------------------------------------------------

function boardKind(board) {
  if (board.tournament) return board.tournament.recurrence ? "recurring tournament" : "tournament";
  if (board.league) return "league";
  if (board.periods.includes("custom")) return board.schedule && board.schedule.cron ? "scheduled periods" : "seasons";
  return "standard";
}

function boardTags(board) {
  const tags = [];
  if (board.shards > 1) tags.push(`${board.shards} shards`);
  if (board.teams) tags.push(`teams: ${board.teams}`);
  if (board.regions && board.regions.length) tags.push(`regions ${board.regions.join(", ")}`);
  if (board.validation_hook) tags.push(`hook ${board.validation_hook.target}`);
  if (board.tiebreakers && board.tiebreakers.length) tags.push("tie-breakers");
  if (board.score_tiers) tags.push("score tiers");
  return tags;
}

/** The period whose count a list shows: all-time when kept, else the open period (a
 *  tournament's window, a season), else the newest. */
function headlinePeriod(board, periods) {
  const list = periods || [];
  return (
    list.find((p) => p.kind === "all-time") ||
    list.find((p) => p.status === "open") ||
    list.find((p) => p.status !== "upcoming") ||
    null
  );
}

async function allBoards() {
  const boards = await state.client.listBoards();
  state.boardsCache = boards;
  return boards;
}

async function boardsView(query) {
  const view = startView("boards", "Boards", "boards");
  const filter = (query.q || "").trim().toLowerCase();
  const page = intParam(query.page, 0);
  main().append(
    h("div", { class: "view-head" },
      h("form", {
        class: "row", role: "search", "aria-label": "Filter boards",
        onsubmit: (event) => {
          event.preventDefault();
          location.hash = link(["boards"], { q: event.target.elements.q.value.trim() });
        },
      },
        h("div", { class: "grow" },
          h("label", { for: "board-filter", text: "Filter by id or title" }),
          h("input", { id: "board-filter", name: "q", type: "search", value: query.q || "", "data-testid": "board-filter" })),
        h("button", { type: "submit", class: "secondary", text: "Filter" })),
      h("div", { class: "actions" },
        h("a", { class: "button", href: "#/boards/new", "data-testid": "new-board", text: "New board" }))),
  );
  const boards = (await allBoards()).filter(
    (b) => !filter || b.board_id.includes(filter) || String(b.title || "").toLowerCase().includes(filter),
  );
  if (!view.alive()) return;
  const from = Math.min(page * BOARDS_PAGE, Math.max(0, boards.length - 1));
  const shown = boards.slice(from, from + BOARDS_PAGE);
  // One read of each shown board's periods (one round trip each): entries per period.
  const periods = await Promise.all(
    shown.map((b) => state.client.listPeriods(b.board_id).then((p) => p.periods, () => null)),
  );
  if (!view.alive()) return;
  const rows = shown.map((board, i) => {
    const headline = headlinePeriod(board, periods[i]);
    const entries = headline
      ? h("span", { title: `entries in ${headline.period}`, text: `${fmtNumber(headline.entries ?? 0)}${headline.kind === "all-time" ? "" : ` (${headline.kind} ${headline.period})`}` })
      : "–";
    return [
      h("a", { href: link(["boards", board.board_id]), text: board.board_id }),
      board.title || "",
      h("span", {}, h("span", { class: "badge", text: boardKind(board) }), boardTags(board).length ? ` ${boardTags(board).join(" · ")}` : ""),
      board.periods.join(", "),
      `${board.mode}, ${board.sort === "desc" ? "higher wins" : "lower wins"}`,
      entries,
    ];
  });
  main().append(
    h("section", { class: "panel" },
      table({
        caption: `Boards${filter ? ` matching “${filter}”` : ""}`,
        testid: "boards",
        columns: [
          { label: "Board", key: "board" },
          { label: "Title", key: "title" },
          { label: "Kind", key: "kind" },
          { label: "Periods", key: "periods" },
          { label: "Rules", key: "rules" },
          { label: "Entries", key: "entries", num: true },
        ],
        rows,
        rowAttrs: (i) => ({ "data-board": shown[i].board_id }),
        empty: filter ? "No board matches." : "No boards yet: create one.",
      }),
      pager({
        testid: "boards-pager",
        label: "Pages of boards",
        info: pageInfo(from, shown.length, boards.length),
        prev: from > 0 ? link(["boards"], { q: query.q, page: page - 1 }) : null,
        next: from + BOARDS_PAGE < boards.length ? link(["boards"], { q: query.q, page: page + 1 }) : null,
      })),
  );
  ready(view);
}

// ---- a board: the form ---------------------------------------------------------------------------

const NUMBER_FIELDS = [
  ["live_top", "Live top (1–100)", "How many top entries each live message carries."],
  ["max_entries", "Max entries", "Keep only the best N per period and region; empty: no limit."],
  ["min_score", "Min score", ""],
  ["max_score", "Max score", ""],
  ["max_increment", "Max increment", "Increment boards only: the largest score one submission may add."],
  ["rate_limit_per_minute", "Rate limit per player, per minute", ""],
  ["shards", "Shards (1–256)", "Cannot change once the board has entries."],
];
const IMMUTABLE_NOTE = "Cannot change once the board has entries.";

/** A form field: label, control, hint, and a place for the API's error on it. `path` is the
 *  field's path as the API names it in errors (`schedule.timezone`). */
function field(path, label, control, hint) {
  const id = `f-${path.replace(/[^a-z0-9]+/gi, "-")}`;
  control.id = id;
  control.dataset.field = path;
  control.dataset.testid = `field-${path}`;
  const hintId = hint ? `${id}-hint` : null;
  const errorId = `${id}-error`;
  control.setAttribute("aria-describedby", [hintId, errorId].filter(Boolean).join(" "));
  return h("div", { class: "field" },
    h("label", { for: id, text: label }),
    control,
    hint ? h("p", { class: "hint", id: hintId, text: hint }) : null,
    h("p", { class: "field-error", id: errorId, "data-error-for": path, "data-testid": `error-${path}`, hidden: true }));
}

function textInput(value, attrs) {
  return h("input", { type: "text", value: value ?? "", autocomplete: "off", spellcheck: "false", ...(attrs || {}) });
}

function selectInput(options, value) {
  return h("select", {}, options.map(([v, label]) => h("option", { value: v, text: label, selected: v === value })));
}

/** A number as typed: a number when it is one, the text itself otherwise (the API says what is
 *  wrong with it, on its field), null when empty. */
function numberOrText(text) {
  const value = text.trim();
  if (value === "") return null;
  return /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(value) ? Number(value) : value;
}

async function boardFormView(boardId) {
  const creating = boardId === null;
  const view = startView(creating ? "board-new" : "board-edit", creating ? "New board" : `Edit board ${boardId}`, "boards");
  const board = creating ? null : await state.client.getBoard(boardId);
  if (!view.alive()) return;
  const b = board || {};
  const controls = {};
  const put = (path, control) => {
    controls[path] = control;
    return control;
  };

  const periodsBox = h("fieldset", { "data-field": "periods", id: "f-periods", "data-testid": "field-periods", "aria-describedby": "f-periods-error" },
    h("legend", { text: "Periods" }),
    h("div", { class: "checks" },
      PERIOD_KINDS.map((kind) =>
        h("label", {},
          h("input", { type: "checkbox", name: "periods", value: kind, checked: (b.periods || ["all-time", "weekly"]).includes(kind) }),
          kind))),
    h("p", { class: "hint", text: `custom needs a schedule. ${creating ? "" : IMMUTABLE_NOTE}` }),
    h("p", { class: "field-error", id: "f-periods-error", "data-error-for": "periods", "data-testid": "error-periods", hidden: true }));
  controls.periods = periodsBox;

  const tournament = b.tournament || null;
  const isTournament = h("input", { type: "checkbox", id: "f-is-tournament", "data-testid": "field-is-tournament", checked: Boolean(tournament) });
  const tournamentFields = h("div", { class: "form-grid", id: "tournament-fields", hidden: !tournament },
    field("tournament.starts_at", "Starts at (ISO 8601, with a zone)", put("tournament.starts_at", textInput(tournament && tournament.starts_at, { placeholder: "2026-12-05T18:00:00Z" }))),
    field("tournament.ends_at", "Ends at", put("tournament.ends_at", textInput(tournament && tournament.ends_at, { placeholder: "2026-12-07T18:00:00Z" }))),
    field("tournament.max_participants", "Max participants", put("tournament.max_participants", textInput(tournament && tournament.max_participants, { inputmode: "numeric" }))),
    field("tournament.max_attempts", "Max attempts per player", put("tournament.max_attempts", textInput(tournament && tournament.max_attempts, { inputmode: "numeric" }))),
    h("div", { class: "field" },
      h("label", { class: "check" },
        put("tournament.join_required", h("input", { type: "checkbox", id: "f-tournament-join_required", "data-field": "tournament.join_required", checked: Boolean(tournament && tournament.join_required) })),
        "Players must sign up first")));
  isTournament.addEventListener("change", () => {
    tournamentFields.hidden = !isTournament.checked;
  });

  const extraValue = {};
  for (const key of ["tiebreakers", "teams", "rewards", "league", "score_tiers"]) {
    if (board && board[key] !== null && board[key] !== undefined && !(Array.isArray(board[key]) && board[key].length === 0)) extraValue[key] = board[key];
  }
  if (tournament && tournament.recurrence) extraValue.tournament_recurrence = tournament.recurrence;
  const extra = put("extra", h("textarea", { rows: 4, spellcheck: "false", "data-extra": "true" }));
  extra.value = Object.keys(extraValue).length ? JSON.stringify(extraValue, null, 2) : "";

  const schedule = b.schedule || {};
  const hook = b.validation_hook || {};
  const summary = h("div", { id: "form-error", "data-testid": "form-error", class: "error-box", role: "alert" });
  const form = h("form", { id: "board-form", "data-testid": "board-form", novalidate: true, autocomplete: "off" },
    h("div", { class: "form-grid" },
      creating
        ? field("board_id", "Board id", put("board_id", textInput("", { required: true, placeholder: "arena" })), "a–z, 0–9, _ and -, up to 64; it names the board for good.")
        : null,
      field("title", "Title", put("title", textInput(b.title))),
      field("sort", "Sort", put("sort", selectInput([["desc", "desc: higher is better"], ["asc", "asc: lower is better"]], b.sort || "desc")), creating ? "" : IMMUTABLE_NOTE),
      field("mode", "Mode", put("mode", selectInput([["increment", "increment: add"], ["best", "best: keep the best"], ["set", "set: replace"]], b.mode || "increment")), creating ? "" : IMMUTABLE_NOTE),
      field("ties", "Ties", put("ties", selectInput([["shared", "shared (1, 2, 2, 4)"], ["first", "first to reach it ranks higher"]], b.ties || "shared"))),
      field("regions", "Regions (comma separated)", put("regions", textInput((b.regions || []).join(", "), { placeholder: "EU, NA" }))),
      NUMBER_FIELDS.map(([path, label, hint]) =>
        field(path, label, put(path, textInput(b[path] ?? "", { inputmode: "numeric", placeholder: path === "live_top" ? "10" : path === "shards" ? "1" : "" })), hint))),
    periodsBox,
    h("fieldset", {},
      h("legend", { text: "Schedule (custom periods)" }),
      h("div", { class: "form-grid" },
        field("schedule.cron", "Cron (5 fields; empty: seasons ended by hand)", put("schedule.cron", textInput(schedule.cron, { placeholder: "0 18 * * SUN" }))),
        field("schedule.timezone", "Time zone (IANA)", put("schedule.timezone", textInput(schedule.timezone, { placeholder: "UTC" }))))),
    h("fieldset", {},
      h("legend", { text: "Validation hook" }),
      h("div", { class: "form-grid" },
        field("validation_hook.target", "Target (empty: none)", put("validation_hook.target", textInput(hook.target, { placeholder: "no_negative" }))),
        field("validation_hook.timeout_ms", "Timeout (ms, 10–5000)", put("validation_hook.timeout_ms", textInput(hook.timeout_ms, { inputmode: "numeric", placeholder: "500" }))),
        field("validation_hook.on_failure", "On failure", put("validation_hook.on_failure", selectInput([["closed", "closed: refuse"], ["open", "open: apply, mark failed_open"]], hook.on_failure || "closed"))))),
    h("fieldset", {},
      h("legend", { text: "Tournament" }),
      h("label", { class: "check", for: "f-is-tournament" }, isTournament, "This board is a tournament (one custom period: its window)"),
      tournamentFields),
    h("fieldset", {},
      h("legend", { text: "Other rules (JSON)" }),
      field("extra", "tiebreakers, teams, rewards, league, score_tiers, tournament_recurrence", extra,
        'A JSON object, e.g. {"tiebreakers": [{"name": "time_ms", "sort": "asc"}]}; docs/API.md describes each.')),
    h("div", { class: "row" },
      h("button", { type: "submit", id: "save-board", "data-testid": "save-board", text: creating ? "Create board" : "Save changes" }),
      h("a", { class: "button secondary", href: creating ? "#/boards" : link(["boards", boardId]), text: "Cancel" })),
    summary);

  const formErrors = () => {
    for (const node of form.querySelectorAll("[data-error-for]")) {
      node.hidden = true;
      node.textContent = "";
    }
    for (const node of form.querySelectorAll("[aria-invalid]")) node.removeAttribute("aria-invalid");
    summary.replaceChildren();
  };

  /** The API's error on the field it names (or the closest enclosing field); the form's
   *  summary says it too. */
  const showFieldError = (error, extraKeys) => {
    const named = [...new Set([error.field, ...error.fields].filter(Boolean))];
    let first = null;
    for (const path of named) {
      let target = null;
      let candidate = path;
      while (candidate && !target) {
        target = form.querySelector(`[data-error-for="${CSS.escape(candidate)}"]`);
        if (!target) {
          const shorter = candidate.replace(/(\.[^.[\]]+|\[\d+\])$/, "");
          candidate = shorter === candidate ? "" : shorter;
        }
      }
      if (!target) {
        const top = path.split(/[.[]/)[0];
        if (extraKeys.has(top) || (top === "tournament" && extraKeys.has("tournament_recurrence"))) {
          target = form.querySelector('[data-error-for="extra"]');
        }
      }
      if (!target) continue;
      target.hidden = false;
      target.textContent = `${error.status === 422 ? "Refused" : "Invalid"} (${error.status}): ${error.body.message}`;
      target.dataset.status = String(error.status);
      const control = form.querySelector(`[data-field="${CSS.escape(target.dataset.errorFor)}"]`);
      if (control) {
        control.setAttribute("aria-invalid", "true");
        first = first || control;
      }
    }
    summary.replaceChildren(
      h("p", { class: "err", "data-status": String(error.status), "data-field": named.join(" ") || null },
        `The service refused the board (${error.status}): ${error.body.message}`,
        named.length ? ` (field${named.length > 1 ? "s" : ""}: ${named.join(", ")})` : ""),
    );
    const focusable = first && (first.matches("fieldset") ? first.querySelector("input") : first);
    if (focusable) focusable.focus();
  };

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    formErrors();
    const value = (path) => controls[path].value.trim();
    const desired = {};
    desired.title = value("title") || null;
    desired.sort = value("sort");
    desired.mode = value("mode");
    desired.ties = value("ties");
    desired.periods = [...periodsBox.querySelectorAll("input:checked")].map((i) => i.value);
    const regions = value("regions").split(/[\s,]+/).filter(Boolean);
    desired.regions = regions.length ? regions : null;
    for (const [path] of NUMBER_FIELDS) desired[path] = numberOrText(controls[path].value);
    const cron = value("schedule.cron");
    const timezone = value("schedule.timezone");
    desired.schedule = cron || timezone ? { ...(cron ? { cron } : {}), timezone: timezone || "UTC" } : null;
    const target = value("validation_hook.target");
    desired.validation_hook = target
      ? {
          target,
          on_failure: value("validation_hook.on_failure"),
          ...(value("validation_hook.timeout_ms") ? { timeout_ms: numberOrText(controls["validation_hook.timeout_ms"].value) } : {}),
        }
      : null;
    let extraObject = {};
    if (extra.value.trim()) {
      try {
        extraObject = JSON.parse(extra.value);
        if (!extraObject || typeof extraObject !== "object" || Array.isArray(extraObject)) throw new Error("not an object");
      } catch (error) {
        const target = form.querySelector('[data-error-for="extra"]');
        target.hidden = false;
        target.textContent = `Not a JSON object: ${error.message}`;
        extra.setAttribute("aria-invalid", "true");
        extra.focus();
        return;
      }
    }
    const recurrence = extraObject.tournament_recurrence;
    delete extraObject.tournament_recurrence;
    if (isTournament.checked) {
      desired.tournament = {
        starts_at: value("tournament.starts_at") || null,
        ends_at: value("tournament.ends_at") || null,
        join_required: controls["tournament.join_required"].checked,
        max_participants: numberOrText(controls["tournament.max_participants"].value),
        max_attempts: numberOrText(controls["tournament.max_attempts"].value),
        ...(recurrence ? { recurrence } : {}),
      };
    } else {
      desired.tournament = null;
    }
    Object.assign(desired, extraObject);

    let body;
    if (creating) {
      // Only what was given: the service's defaults for the rest.
      body = {};
      for (const [key, v] of Object.entries(desired)) {
        if (v === null || (key === "ties" && v === "shared") || (key === "sort" && v === "desc")) continue;
        if (key === "mode" && v === "increment") continue;
        body[key] = v;
      }
      if (desired.periods.length === 0) body.periods = [];
      else body.periods = desired.periods;
      if (body.tournament && desired.periods.join() === "all-time,weekly") delete body.periods; // set for you
    } else {
      // Merge semantics: only what changed (a rule that cannot change once the board has
      // entries is sent only when it is changed).
      body = {};
      for (const [key, v] of Object.entries(desired)) {
        const current = board[key] === undefined ? null : board[key];
        const wanted = key === "tournament" && v && current ? { ...current, ...v } : v;
        if (stable(wanted) !== stable(current)) body[key] = wanted;
      }
    }
    const id = creating ? value("board_id") : boardId;
    if (creating && !id) {
      showFieldError({ status: 400, field: "board_id", fields: [], body: { message: "a board needs an id" } }, new Set());
      return;
    }
    if (creating) {
      try {
        await state.client.getBoard(id);
        showFieldError({ status: 409, field: "board_id", fields: [], body: { message: `board ${id} exists already: edit it instead` } }, new Set());
        return;
      } catch (error) {
        if (!(error instanceof NotFound) && !(error instanceof BadRequest)) {
          showError(summary, error);
          return;
        }
      }
    }
    if (!creating && Object.keys(body).length === 0) {
      summary.replaceChildren(h("p", { class: "ok", text: "Nothing changed." }));
      return;
    }
    const save = $("save-board");
    save.disabled = true;
    try {
      const result = await state.client.putBoard(id, body);
      flash(result.created ? `Board ${id} created.` : `Board ${id} saved.`);
      location.hash = link(["boards", id]);
    } catch (error) {
      if (error instanceof LeaderboardError && error.status >= 400 && error.status < 500 && !(error instanceof Unauthorized) && !(error instanceof Forbidden)) {
        showFieldError(error, new Set(Object.keys(extraObject).concat(recurrence ? ["tournament_recurrence"] : [])));
      } else {
        showError(summary, error);
      }
    } finally {
      save.disabled = false;
    }
  });

  main().append(
    h("p", { class: "crumbs" }, h("a", { href: "#/boards", text: "Boards" }), board ? [" / ", h("a", { href: link(["boards", boardId]), text: boardId })] : null),
    h("section", { class: "panel" }, form),
  );
  ready(view);
}

// ---- a board: its page ----------------------------------------------------------------------------

async function boardView(boardId, query) {
  const view = startView("board", `Board ${boardId}`, "boards");
  const board = await state.client.getBoard(boardId);
  if (!view.alive()) return;
  const title = board.title ? `${board.title} (${board.board_id})` : board.board_id;
  $("main-heading").textContent = title;
  document.title = `${title} · Leaderboard console`;

  const facts = h("dl", { class: "facts", "data-testid": "board-facts" },
    h("dt", { text: "Kind" }), h("dd", { "data-testid": "board-kind", text: boardKind(board) }),
    h("dt", { text: "Rules" }), h("dd", { text: `${board.mode}, ${board.sort === "desc" ? "higher wins" : "lower wins"}, ties ${board.ties}` }),
    h("dt", { text: "Periods" }), h("dd", { text: board.periods.join(", ") }),
    board.regions ? [h("dt", { text: "Regions" }), h("dd", { text: board.regions.join(", ") })] : null,
    board.schedule ? [h("dt", { text: "Schedule" }), h("dd", { text: board.schedule.cron ? `${board.schedule.cron} (${board.schedule.timezone})` : `ended by hand (${board.schedule.timezone})` })] : null,
    board.validation_hook ? [h("dt", { text: "Validation hook" }), h("dd", { text: `${board.validation_hook.target}, ${board.validation_hook.timeout_ms} ms, fails ${board.validation_hook.on_failure}` })] : null,
    board.tournament ? [h("dt", { text: "Tournament" }), h("dd", { text: tournamentRules(board.tournament) })] : null,
    h("dt", { text: "Live top" }), h("dd", { text: `${board.live_top}${board.shards > 1 ? ` · ${board.shards} shards` : ""}` }),
  );

  const head = h("div", { class: "view-head" },
    h("p", { class: "crumbs" }, h("a", { href: "#/boards", text: "Boards" }), " / ", board.board_id),
    h("div", { class: "actions" },
      h("a", { class: "button secondary", href: link(["boards", boardId, "edit"]), "data-testid": "edit-board", text: "Edit" }),
      h("a", { class: "button secondary", href: link(["moderation", boardId]), "data-testid": "board-moderation", text: "Moderation" }),
      board.tournament ? h("a", { class: "button secondary", href: link(["tournaments", boardId]), text: "Tournament" }) : null));

  const find = h("form", {
    class: "row", role: "search", "aria-label": "Find a player", "data-testid": "find-player-form",
    onsubmit: (event) => {
      event.preventDefault();
      const id = event.target.elements.player.value.trim();
      if (id) location.hash = link(["boards", boardId, "players", id]);
    },
  },
    h("div", { class: "grow" },
      h("label", { for: "find-player", text: "Player id" }),
      h("input", { id: "find-player", name: "player", type: "search", autocomplete: "off", spellcheck: "false", maxlength: 64, "data-testid": "find-player" })),
    h("button", { type: "submit", "data-testid": "find-player-go", text: "Find" }));

  const liveSection = h("section", { class: "panel", "aria-labelledby": "live-heading", "data-testid": "live-panel" });
  const periodsSection = h("section", { class: "panel", "aria-labelledby": "periods-heading", "data-testid": "periods-panel" });
  const seasonSection = board.periods.includes("custom") && !board.tournament
    ? h("section", { class: "panel", "aria-labelledby": "season-heading", "data-testid": "season-panel" })
    : null;

  main().append(
    head,
    h("div", { class: "grid-2" },
      liveSection,
      h("div", { class: "stack" },
        h("section", { class: "panel", "aria-labelledby": "facts-heading" }, h("h3", { id: "facts-heading", text: "Rules" }), facts),
        h("section", { class: "panel", "aria-labelledby": "find-heading" }, h("h3", { id: "find-heading", text: "Find a player" }), find),
        seasonSection)),
    periodsSection,
  );

  liveTop(view, board, liveSection, query);
  const refreshPeriods = () => periodsPanel(view, board, periodsSection, seasonSection, query);
  await refreshPeriods();
  ready(view);
}

/** ", from X to Y" (or since X; nothing for all-time). */
function bounds(period) {
  if (!period.starts_at) return "";
  return period.ends_at ? `, ${fmtTime(period.starts_at)} to ${fmtTime(period.ends_at)}` : `, since ${fmtTime(period.starts_at)}`;
}

function tournamentRules(t) {
  const parts = [];
  if (t.recurrence) parts.push(`every ${t.recurrence.cron} (${t.recurrence.timezone}), ${Math.round(t.recurrence.duration_seconds / 60)} min each`);
  else parts.push(`${fmtTime(t.starts_at)} to ${fmtTime(t.ends_at)}`);
  parts.push(t.join_required ? "sign-up required" : "no sign-up");
  parts.push(t.max_participants ? `at most ${fmtNumber(t.max_participants)} players` : "no cap");
  parts.push(t.max_attempts ? `${fmtNumber(t.max_attempts)} attempts each` : "unlimited attempts");
  return parts.join(" · ");
}

/** The board's live top: a subscription to `<live_channel>/<kind>[/<region>]` through the
 *  client; each message's `top` is shown as it comes (no read), a read only on (re)subscribe and
 *  after a missed message. Without a live endpoint in config.json it reads every 5 s. */
function liveTop(view, board, section, query) {
  const kinds = board.periods;
  let kind = kinds.includes(query.kind) ? query.kind : kinds.includes("all-time") ? "all-time" : kinds[0];
  let region = board.regions && board.regions.includes(query.region) ? query.region : "";
  const status = h("p", { class: "live-line", id: "live-status", "data-testid": "live-status", "data-state": "connecting", role: "status" },
    h("span", { class: "dot", "aria-hidden": "true" }), h("span", { class: "text", text: "Live: connecting…" }));
  const kindSelect = h("select", { id: "live-kind", "data-testid": "live-kind" }, kinds.map((k) => h("option", { value: k, text: k, selected: k === kind })));
  const regionSelect = h("select", { id: "live-region", "data-testid": "live-region" },
    h("option", { value: "", text: "Global" }), (board.regions || []).map((r) => h("option", { value: r, text: r, selected: r === region })));
  const tableBox = h("div", { id: "live-top-box", "aria-live": "off" });
  const error = h("div", { class: "error-box", role: "alert", "data-testid": "live-error" });
  section.append(
    h("h3", { id: "live-heading", text: "Live top" }),
    h("div", { class: "row" },
      h("div", {}, h("label", { for: "live-kind", text: "Period" }), kindSelect),
      board.regions ? h("div", {}, h("label", { for: "live-region", text: "Region" }), regionSelect) : null),
    status, tableBox, error);

  const render = (entries, total, period, source, changed) => {
    const moved = new Set((changed || []).map((c) => c.player_id));
    const rows = entries.map((e) => [
      e.rank === null ? "–" : String(e.rank),
      h("a", { href: link(["boards", board.board_id, "players", e.player_id]), text: e.player_id }),
      fmtNumber(e.score),
      displayName(e.metadata),
    ]);
    const node = table({
      caption: `Top ${board.live_top} · ${period} · ${fmtNumber(total)} entries`,
      testid: "live-top",
      columns: [{ label: "Rank", key: "rank", num: true }, { label: "Player", key: "player" }, { label: "Score", key: "score", num: true }, { label: "Name", key: "name" }],
      rows,
      rowAttrs: (i) => ({ "data-player": entries[i].player_id, class: moved.has(entries[i].player_id) ? "changed" : null }),
      empty: "No entries in this period yet.",
    });
    node.querySelector("table").dataset.source = source;
    node.querySelector("table").dataset.total = String(total);
    tableBox.replaceChildren(node);
    if (moved.size) {
      setTimeout(() => {
        for (const row of node.querySelectorAll("tr.changed")) row.classList.remove("changed");
      }, 1500);
    }
  };
  const setStatus = (stateName, text) => {
    status.dataset.state = stateName;
    status.querySelector(".text").textContent = text;
  };

  let subscription = null;
  let timer = null;
  const stop = () => {
    if (subscription) subscription.close();
    subscription = null;
    clearInterval(timer);
    timer = null;
  };
  view.cleanups.push(stop);
  const start = () => {
    stop();
    error.replaceChildren();
    const options = { period: kind, region: region || undefined, limit: board.live_top };
    if (!state.config.live) {
      setStatus("polling", "Live: no live endpoint configured (config.json): reading every 5 s");
      const read = async () => {
        try {
          const page = await state.client.entries(board.board_id, options);
          if (view.alive()) render(page.entries, page.total, page.period, "poll");
        } catch (e) {
          if (view.alive()) showError(error, e);
        }
      };
      void read();
      timer = setInterval(read, 5000);
      return;
    }
    setStatus("connecting", "Live: connecting…");
    subscription = state.client.subscribeBoard({
      boardId: board.board_id,
      board,
      periodKind: kind,
      region: region || null,
      onSnapshot: (page, reason) => {
        if (view.alive()) render(page.entries, page.total, page.period, `read:${reason}`);
      },
      onUpdate: (message) => {
        if (!view.alive()) return;
        render(message.top, message.total, message.period, "message", message.changed);
        const tableNode = tableBox.querySelector("table");
        tableNode.dataset.version = String(message.version);
      },
      onStatus: (s) => {
        if (!view.alive()) return;
        const text = {
          connecting: "Live: connecting…",
          live: "Live: WebSocket",
          waiting: `Live: reconnecting (${s.reason || "connection lost"}); reading every 5 s meanwhile`,
          unavailable: "Live: no WebSocket in this browser; reading every 5 s",
          refused: `Live: subscription refused (${s.reason}); reading every 5 s`,
          closed: "Live: closed",
        }[s.state] || s.state;
        setStatus(s.state, text);
        if (s.channel) status.dataset.channel = s.channel;
      },
      onError: (e) => {
        if (view.alive()) showError(error, e);
      },
    });
  };
  kindSelect.addEventListener("change", () => {
    kind = kindSelect.value;
    start();
  });
  regionSelect.addEventListener("change", () => {
    region = regionSelect.value;
    start();
  });
  start();
}

async function periodsPanel(view, board, section, seasonSection, query) {
  const page = intParam(query.pp, 0);
  const list = (await state.client.listPeriods(board.board_id)).periods;
  if (!view.alive()) return;
  const from = Math.min(page * PERIODS_PAGE, Math.max(0, list.length - 1));
  const shown = list.slice(from, from + PERIODS_PAGE);
  section.replaceChildren(
    h("h3", { id: "periods-heading", text: "Periods" }),
    table({
      caption: "Open, closed and archived periods, with their entries",
      testid: "periods",
      columns: [
        { label: "Period", key: "period" }, { label: "Kind", key: "kind" }, { label: "Status", key: "status" },
        { label: "Starts", key: "starts" }, { label: "Ends", key: "ends" }, { label: "Entries", key: "entries", num: true },
        { label: "", key: "action" },
      ],
      rows: shown.map((p) => [
        p.period, p.kind, h("span", { class: `badge ${p.status}`, text: p.status }), fmtTime(p.starts_at), fmtTime(p.ends_at),
        fmtNumber(p.entries ?? 0),
        p.status === "upcoming" ? "" : h("a", { href: link(["boards", board.board_id, "periods", p.period]), "aria-label": `Browse ${p.period}`, "data-testid": `browse-${p.period}`, text: p.status === "archived" ? "Browse archive" : "Browse" }),
      ]),
      rowAttrs: (i) => ({ "data-period": shown[i].period, "data-status": shown[i].status }),
      empty: "No periods.",
    }),
    pager({
      testid: "periods-pager",
        label: "Pages of periods",
      info: pageInfo(from, shown.length, list.length),
      prev: from > 0 ? link(["boards", board.board_id], { ...query, pp: page - 1 }) : null,
      next: from + PERIODS_PAGE < list.length ? link(["boards", board.board_id], { ...query, pp: page + 1 }) : null,
    }),
  );
  if (!seasonSection) return;
  const current = list.find((p) => p.kind === "custom" && p.status === "open");
  const result = h("div", { class: "status-box", role: "status", "data-testid": "end-season-result" });
  const button = h("button", {
    type: "button", class: "danger", id: "end-season", "data-testid": "end-season", disabled: !current,
    text: "End season now…",
    onclick: async () => {
      const confirmed = await confirmDialog({
        testid: "end-season",
        title: `End season ${current.period} now?`,
        body: [
          h("p", { text: `The current season of ${board.board_id} (started ${fmtTime(current.starts_at)}, ${fmtNumber(current.entries ?? 0)} entries) ends at the next whole second, and the next season starts then.` }),
          h("p", { text: "Scores submitted after that go to the new season. The ended season's final standings are archived by the rollover within a minute and stay readable; it cannot be reopened." }),
        ],
        confirmLabel: "End season now",
      });
      if (!confirmed) return;
      button.disabled = true;
      try {
        const answer = await state.client.endPeriod(board.board_id, { retries: 0 });
        result.replaceChildren(h("p", { class: "ok", "data-ended": answer.ended.period, "data-current": answer.current.period, "data-ended-at": answer.ended.ends_at,
          text: `Season ${answer.ended.period} ended at ${fmtTime(answer.ended.ends_at)}; season ${answer.current.period} is current.` }));
        flash(`Season ${answer.ended.period} ended.`);
        // The end takes effect at the next whole second: list the periods from then on.
        const wait = Date.parse(answer.ended.ends_at) - Date.now();
        if (wait > 0) await new Promise((resolve) => setTimeout(resolve, Math.min(wait + 50, 2000)));
        if (!view.alive()) return;
        await periodsPanel(view, board, section, seasonSection, query);
        const shown = seasonSection.querySelector("[data-testid=end-season-result]");
        shown.replaceChildren(...result.childNodes);
        // The button that opened the dialog was replaced: the focus goes to what happened.
        shown.tabIndex = -1;
        shown.focus();
      } catch (error) {
        button.disabled = false;
        showError(result, error);
      }
    },
  });
  seasonSection.replaceChildren(
    h("h3", { id: "season-heading", text: "Season" }),
    h("p", { "data-testid": "current-season", text: current ? `Current season: ${current.period}, since ${fmtTime(current.starts_at)}${current.ends_at ? `, until ${fmtTime(current.ends_at)}` : ", until ended by hand"}.` : "No open season." }),
    button,
    result,
  );
}

// ---- a period's entries (any period: open, closed, archived) ---------------------------------

async function periodView(boardId, period, query) {
  const view = startView("period", `${boardId}: period ${period}`, "boards");
  const offset = intParam(query.offset, 0, 999_999_999);
  const region = query.region || "";
  const [board, periods] = await Promise.all([state.client.getBoard(boardId), state.client.listPeriods(boardId)]);
  if (!view.alive()) return;
  const info = periods.periods.find((p) => p.period === period);
  const box = h("div", { "data-testid": "period-entries-box" });
  const error = h("div", { class: "error-box", role: "alert", "data-testid": "period-error" });
  const jump = h("form", {
    class: "row", "aria-label": "Go to a rank",
    onsubmit: (event) => {
      event.preventDefault();
      const rank = intParam(event.target.elements.rank.value, 1);
      location.hash = link(["boards", boardId, "periods", period], { region, offset: Math.floor(Math.max(0, rank - 1) / ENTRIES_PAGE) * ENTRIES_PAGE });
    },
  },
    h("div", {}, h("label", { for: "go-rank", text: "Go to rank" }), h("input", { id: "go-rank", name: "rank", inputmode: "numeric", "data-testid": "go-rank" })),
    h("button", { type: "submit", class: "secondary", text: "Go" }),
    board.regions
      ? h("div", {}, h("label", { for: "period-region", text: "Region" }),
        h("select", {
          id: "period-region", "data-testid": "period-region",
          onchange: (event) => {
            location.hash = link(["boards", boardId, "periods", period], { region: event.target.value });
          },
        }, h("option", { value: "", text: "Global" }), board.regions.map((r) => h("option", { value: r, text: r, selected: r === region }))))
      : null);
  main().append(
    h("p", { class: "crumbs" }, h("a", { href: "#/boards", text: "Boards" }), " / ", h("a", { href: link(["boards", boardId]), text: boardId }), " / ", period),
    h("section", { class: "panel" },
      h("p", { "data-testid": "period-info" },
        info ? [h("span", { class: `badge ${info.status}`, text: info.status }), ` ${info.kind} period${bounds(info)}`] : "A period the board no longer lists."),
      jump, box, error),
  );
  try {
    const page = await state.client.entries(boardId, { period, region: region || undefined, offset, limit: ENTRIES_PAGE });
    if (!view.alive()) return;
    box.append(
      table({
        caption: `${period}${region ? ` · ${region}` : ""} · ${fmtNumber(page.total)} entries${page.degraded ? " (degraded: read from PostgreSQL)" : ""}`,
        testid: "period-entries",
        columns: [{ label: "Rank", key: "rank", num: true }, { label: "Player", key: "player" }, { label: "Score", key: "score", num: true }, { label: "Name", key: "name" }],
        rows: page.entries.map((e) => [String(e.rank), h("a", { href: link(["boards", boardId, "players", e.player_id]), text: e.player_id }), fmtNumber(e.score), displayName(e.metadata)]),
        rowAttrs: (i) => ({ "data-player": page.entries[i].player_id }),
        empty: "No entries on this page.",
      }),
      pager({
        testid: "period-pager",
        label: "Pages of entries",
        info: pageInfo(offset, page.entries.length, page.total),
        prev: offset > 0 ? link(["boards", boardId, "periods", period], { region, offset: Math.max(0, offset - ENTRIES_PAGE) }) : null,
        next: offset + ENTRIES_PAGE < page.total ? link(["boards", boardId, "periods", period], { region, offset: offset + ENTRIES_PAGE }) : null,
      }),
    );
  } catch (e) {
    if (e instanceof NotFound) box.append(h("p", { class: "empty", text: `No entries: ${e.body.message}` }));
    else showError(error, e);
  }
  ready(view);
}

// ---- a player ---------------------------------------------------------------------------------

async function playerView(boardId, playerId, query) {
  const view = startView("player", `Player ${playerId}`, "boards");
  const board = await state.client.getBoard(boardId);
  if (!view.alive()) return;
  $("main-heading").textContent = `Player ${playerId} on ${board.board_id}`;
  const kinds = board.periods.filter((k) => k !== "all-time");
  const historyKind = kinds.includes(query.kind) ? query.kind : kinds.includes("custom") ? "custom" : kinds.includes("weekly") ? "weekly" : kinds[0];
  const aroundKind = board.periods.includes(query.around) ? query.around : board.periods.includes("all-time") ? "all-time" : board.periods[0];
  const statusBox = h("div", { class: "status-box", role: "status", "data-testid": "player-action-result" });
  const errorBox = h("div", { class: "error-box", role: "alert", "data-testid": "player-error" });
  const summary = h("p", { "data-testid": "player-summary" });
  const hiddenBadge = h("span", { class: "badge hidden", "data-testid": "hidden-badge", hidden: true, text: "hidden" });
  const reason = h("input", { id: "hide-reason", "data-testid": "hide-reason", autocomplete: "off", maxlength: 500, placeholder: "e.g. aimbot, ticket 4411" });
  const standingsBox = h("section", { class: "panel", "aria-labelledby": "standings-heading", "data-testid": "standings-panel" });
  const historyBox = h("section", { class: "panel", "aria-labelledby": "history-heading", "data-testid": "history-panel" });
  const aroundBox = h("section", { class: "panel", "aria-labelledby": "around-heading", "data-testid": "around-panel" });
  let standings = [];

  const hideButton = h("button", { type: "button", id: "hide-player", "data-testid": "hide-player", class: "secondary", text: "Hide" });
  const unhideButton = h("button", { type: "button", id: "unhide-player", "data-testid": "unhide-player", class: "secondary", text: "Unhide" });
  const removeButton = h("button", { type: "button", id: "remove-player", "data-testid": "remove-player", class: "danger", text: "Remove entries…" });

  const loadStandings = async () => {
    try {
      const answer = await state.client.standings(boardId, playerId);
      standings = answer.standings;
    } catch (e) {
      if (!(e instanceof NotFound)) throw e;
      standings = [];
    }
    if (!view.alive()) return;
    const hidden = standings.some((s) => s.hidden === true);
    hiddenBadge.hidden = !hidden;
    main().dataset.hidden = String(hidden);
    summary.textContent = standings.length
      ? `${standings.length} standing${standings.length === 1 ? "" : "s"} in the current periods${hidden ? "; hidden: public reads leave this player out" : ""}.`
      : "No entries in the current periods of this board.";
    standingsBox.replaceChildren(
      h("h3", { id: "standings-heading", text: "Standings in every current period" }),
      table({
        caption: "Every current period and region the player is on",
        testid: "standings",
        columns: [{ label: "Period", key: "period" }, { label: "Kind", key: "kind" }, { label: "Region", key: "region" }, { label: "Rank", key: "rank", num: true },
          { label: "Score", key: "score", num: true }, { label: "Of", key: "total", num: true }, { label: "Top %", key: "top", num: true }],
        rows: standings.map((s) => [
          h("a", { href: link(["boards", boardId, "periods", s.period], { region: s.region || undefined }), text: s.period }), s.kind, s.region || "global",
          s.rank === null ? "–" : String(s.rank), fmtNumber(s.score), fmtNumber(s.total), s.top_percent === null || s.top_percent === undefined ? "–" : `${s.top_percent}%`,
        ]),
        rowAttrs: (i) => ({ "data-period": standings[i].period, "data-kind": standings[i].kind, "data-region": standings[i].region || "" }),
        empty: "No standing: the player has no entry in any current period.",
      }),
    );
  };

  const loadHistory = async () => {
    historyBox.replaceChildren(h("h3", { id: "history-heading", text: "History (archived periods)" }));
    if (!historyKind) {
      historyBox.append(h("p", { class: "empty", text: "This board keeps only all-time: no past periods." }));
      return;
    }
    const before = query.before || undefined;
    const answer = await state.client.history(boardId, playerId, { kind: historyKind, before, limit: HISTORY_PAGE });
    if (!view.alive()) return;
    const key = `history:${boardId}:${playerId}:${historyKind}`;
    if (answer.next) state.cursors.set(`${key}:${answer.next}`, before || "");
    const prevCursor = before ? state.cursors.get(`${key}:${before}`) : undefined;
    historyBox.append(
      h("div", { class: "row" },
        h("div", {}, h("label", { for: "history-kind", text: "Kind" }),
          h("select", {
            id: "history-kind", "data-testid": "history-kind",
            onchange: (event) => {
              location.hash = link(["boards", boardId, "players", playerId], { kind: event.target.value, around: query.around });
            },
          }, kinds.map((k) => h("option", { value: k, text: k, selected: k === historyKind }))))),
      table({
        caption: `Final standings, ${historyKind} periods, newest first`,
        testid: "history",
        columns: [{ label: "Period", key: "period" }, { label: "Rank", key: "rank", num: true }, { label: "Score", key: "score", num: true }, { label: "Of", key: "total", num: true }, { label: "Top %", key: "top", num: true }],
        rows: answer.results.map((r) => [h("a", { href: link(["boards", boardId, "periods", r.period]), text: r.period }), String(r.rank), fmtNumber(r.score), fmtNumber(r.total), `${r.top_percent}%`]),
        rowAttrs: (i) => ({ "data-period": answer.results[i].period }),
        empty: "No archived results.",
      }),
      pager({
        testid: "history-pager",
        label: "Pages of history",
        info: before ? `before ${before}` : "newest",
        prev: before ? link(["boards", boardId, "players", playerId], { kind: historyKind, around: query.around, before: prevCursor || undefined }) : null,
        next: answer.next ? link(["boards", boardId, "players", playerId], { kind: historyKind, around: query.around, before: answer.next }) : null,
      }),
    );
  };

  const loadAround = async () => {
    aroundBox.replaceChildren(h("h3", { id: "around-heading", text: "Around the player" }));
    const select = h("select", {
      id: "around-kind", "data-testid": "around-kind",
      onchange: (event) => {
        location.hash = link(["boards", boardId, "players", playerId], { kind: query.kind, around: event.target.value });
      },
    }, board.periods.map((k) => h("option", { value: k, text: k, selected: k === aroundKind })));
    aroundBox.append(h("div", { class: "row" }, h("div", {}, h("label", { for: "around-kind", text: "Period" }), select)));
    try {
      const answer = await state.client.around(boardId, playerId, { period: aroundKind, count: AROUND_COUNT });
      if (!view.alive()) return;
      aroundBox.append(table({
        caption: `${AROUND_COUNT} entries around ${playerId} · ${answer.period} · ${fmtNumber(answer.total)} entries`,
        testid: "around",
        columns: [{ label: "Rank", key: "rank", num: true }, { label: "Player", key: "player" }, { label: "Score", key: "score", num: true }, { label: "Name", key: "name" }],
        rows: answer.entries.map((e) => [String(e.rank), e.player_id === playerId ? e.player_id : h("a", { href: link(["boards", boardId, "players", e.player_id]), text: e.player_id }), fmtNumber(e.score), displayName(e.metadata)]),
        rowAttrs: (i) => ({ "data-player": answer.entries[i].player_id, "aria-current": answer.entries[i].player_id === playerId ? "true" : null }),
      }));
    } catch (e) {
      if (!(e instanceof NotFound)) throw e;
      aroundBox.append(h("p", { class: "empty", "data-testid": "around-empty", text: `No entry in ${aroundKind}.` }));
    }
  };

  hideButton.addEventListener("click", async () => {
    statusBox.replaceChildren();
    errorBox.replaceChildren();
    try {
      const answer = await state.client.hidePlayer(boardId, playerId, reason.value.trim() || null);
      statusBox.replaceChildren(h("p", { class: "ok", "data-done": "hidden", text: `${playerId} is hidden on ${boardId} since ${fmtTime(answer.hidden_at)}${answer.created ? "" : " (already was)"}: public reads, totals and live messages leave them out.` }));
      await loadStandings();
    } catch (e) {
      showError(errorBox, e);
    }
  });
  unhideButton.addEventListener("click", async () => {
    statusBox.replaceChildren();
    errorBox.replaceChildren();
    try {
      await state.client.unhidePlayer(boardId, playerId);
      statusBox.replaceChildren(h("p", { class: "ok", "data-done": "shown", text: `${playerId} is shown again on ${boardId}.` }));
      await loadStandings();
    } catch (e) {
      if (e instanceof NotFound) statusBox.replaceChildren(h("p", { class: "ok", "data-done": "not-hidden", text: `${playerId} was not hidden on ${boardId}.` }));
      else showError(errorBox, e);
    }
  });
  removeButton.addEventListener("click", async () => {
    statusBox.replaceChildren();
    errorBox.replaceChildren();
    const lost = standings.length
      ? h("ul", { "data-testid": "remove-lost" }, standings.map((s) => h("li", { text: `${s.period}${s.region ? ` (${s.region})` : ""}: rank ${s.rank ?? "–"}, score ${fmtNumber(s.score)}` })))
      : h("p", { text: "No standing in the current periods (earlier, unarchived periods are removed too)." });
    const confirmed = await confirmDialog({
      testid: "remove-player",
      title: `Remove ${playerId}'s entries on ${boardId}?`,
      body: [
        h("p", { text: `This deletes ${playerId}'s entries in every period and region of ${boardId} (current and past periods not yet archived) and their metadata, in the serving index and in PostgreSQL. It cannot be undone. What is lost:` }),
        lost,
        h("p", { text: "Archived final standings are kept. The removal is recorded: PostgreSQL keeps a tombstone with its time and version, so no queued or replayed earlier submission brings the entries back; a later submission counts again." }),
      ],
      confirmLabel: "Remove entries",
    });
    if (!confirmed) {
      statusBox.replaceChildren(h("p", { "data-done": "kept", text: "Nothing removed." }));
      return;
    }
    try {
      await state.client.deletePlayer(boardId, playerId);
      statusBox.replaceChildren(h("p", { class: "ok", "data-done": "removed", text: `Removed ${playerId}'s entries on ${boardId}; the removal is recorded.` }));
      flash(`Removed ${playerId}'s entries on ${boardId}.`);
      await Promise.all([loadStandings(), loadAround()]);
    } catch (e) {
      showError(errorBox, e);
    }
  });

  main().append(
    h("p", { class: "crumbs" }, h("a", { href: "#/boards", text: "Boards" }), " / ", h("a", { href: link(["boards", boardId]), text: boardId }), " / players / ", playerId),
    h("section", { class: "panel", "aria-label": "Actions" },
      h("p", {}, hiddenBadge, summary),
      h("div", { class: "row" },
        h("div", { class: "grow" }, h("label", { for: "hide-reason", text: "Reason for hiding (kept for admins)" }), reason),
        hideButton, unhideButton, removeButton),
      statusBox, errorBox),
    h("div", { class: "grid-2" }, h("div", { class: "stack" }, standingsBox, historyBox), aroundBox),
  );
  await Promise.all([loadStandings(), loadHistory(), loadAround()]);
  ready(view);
}

// ---- moderation ---------------------------------------------------------------------------------

async function moderationIndexView() {
  const view = startView("moderation-index", "Moderation", "moderation");
  const boards = await allBoards();
  if (!view.alive()) return;
  const hooked = boards.filter((b) => b.validation_hook);
  main().append(
    h("section", { class: "panel" },
      h("form", {
        class: "row", "aria-label": "Open a board's moderation",
        onsubmit: (event) => {
          event.preventDefault();
          const id = event.target.elements.board.value.trim();
          if (id) location.hash = link(["moderation", id]);
        },
      },
        h("div", { class: "grow" },
          h("label", { for: "moderation-board", text: "Board id" }),
          h("input", { id: "moderation-board", name: "board", list: "moderation-boards", autocomplete: "off", "data-testid": "moderation-board" }),
          h("datalist", { id: "moderation-boards" }, boards.slice(0, 500).map((b) => h("option", { value: b.board_id })))),
        h("button", { type: "submit", text: "Open" })),
      h("h3", { class: "spaced", text: "Boards with a validation hook" }),
      hooked.length
        ? h("ul", { "data-testid": "hooked-boards" }, hooked.slice(0, 100).map((b) => h("li", {}, h("a", { href: link(["moderation", b.board_id]), text: b.board_id }), ` (hook ${b.validation_hook.target})`)))
        : h("p", { class: "empty", text: "No board has a validation hook; hidden players can still be managed per board." })),
  );
  ready(view);
}

async function moderationView(boardId, query) {
  const view = startView("moderation", `Moderation: ${boardId}`, "moderation");
  const board = await state.client.getBoard(boardId);
  if (!view.alive()) return;
  const verdict = query.verdict === "failed_open" ? "failed_open" : "flag";
  const flagsBox = h("section", { class: "panel", "aria-labelledby": "flags-heading", "data-testid": "flags-panel" });
  const hiddenBox = h("section", { class: "panel", "aria-labelledby": "hidden-heading", "data-testid": "hidden-panel" });
  const statusBox = h("div", { class: "status-box", role: "status", "data-testid": "moderation-result" });
  const errorBox = h("div", { class: "error-box", role: "alert", "data-testid": "moderation-error" });
  let hiddenIds = new Set();

  const loadHidden = async () => {
    const after = query.after || undefined;
    const page = await state.client.hiddenPlayers(boardId, { after, limit: HIDDEN_PAGE });
    if (!view.alive()) return;
    hiddenIds = new Set(page.players.map((p) => p.player_id));
    const key = `hidden:${boardId}`;
    if (page.next) state.cursors.set(`${key}:${page.next}`, after || "");
    const prev = after ? state.cursors.get(`${key}:${after}`) : undefined;
    hiddenBox.replaceChildren(
      h("h3", { id: "hidden-heading", text: "Hidden players" }),
      table({
        caption: "Players this board hides (a shadow ban), by id",
        testid: "hidden",
        columns: [{ label: "Player", key: "player" }, { label: "Hidden at", key: "at" }, { label: "Reason", key: "reason" }, { label: "", key: "action" }],
        rows: page.players.map((p) => [
          h("a", { href: link(["boards", boardId, "players", p.player_id]), text: p.player_id }), fmtTime(p.hidden_at), p.reason || "",
          h("button", {
            type: "button", class: "secondary small", "data-testid": `unhide-${p.player_id}`, "aria-label": `Unhide ${p.player_id}`, text: "Unhide",
            onclick: async () => {
              try {
                await state.client.unhidePlayer(boardId, p.player_id);
                statusBox.replaceChildren(h("p", { class: "ok", text: `${p.player_id} is shown again.` }));
                await Promise.all([loadHidden(), loadFlags()]);
              } catch (e) {
                showError(errorBox, e);
              }
            },
          }),
        ]),
        rowAttrs: (i) => ({ "data-player": page.players[i].player_id }),
        empty: "No hidden players.",
      }),
      pager({
        testid: "hidden-pager",
        label: "Pages of hidden players",
        info: after ? `after ${after}` : "from the first",
        prev: after ? link(["moderation", boardId], { verdict: query.verdict, before: query.before, after: prev || undefined }) : null,
        next: page.next ? link(["moderation", boardId], { verdict: query.verdict, before: query.before, after: page.next }) : null,
      }),
    );
  };

  const loadFlags = async () => {
    const before = query.before || undefined;
    const page = await state.client.flags(boardId, { verdict, before, limit: FLAGS_PAGE });
    if (!view.alive()) return;
    const key = `flags:${boardId}:${verdict}`;
    if (page.next) state.cursors.set(`${key}:${page.next}`, before || "");
    const prev = before ? state.cursors.get(`${key}:${before}`) : undefined;
    flagsBox.replaceChildren(
      h("h3", { id: "flags-heading", text: verdict === "flag" ? "Flagged submissions" : "Submissions applied because the hook failed (failed open)" }),
      h("div", { class: "row" },
        h("div", {}, h("label", { for: "flags-verdict", text: "Verdict" }),
          h("select", {
            id: "flags-verdict", "data-testid": "flags-verdict",
            onchange: (event) => {
              location.hash = link(["moderation", boardId], { verdict: event.target.value, after: query.after });
            },
          }, h("option", { value: "flag", text: "flag", selected: verdict === "flag" }), h("option", { value: "failed_open", text: "failed_open", selected: verdict === "failed_open" }))),
        h("button", {
          type: "button", class: "secondary", "data-testid": "refresh-moderation", text: "Refresh",
          onclick: () => Promise.all([loadHidden(), loadFlags()]).catch((e) => showError(errorBox, e)),
        })),
      table({
        caption: "Newest first (a submission shows once the persister stored it)",
        testid: "flags",
        columns: [{ label: "When", key: "when" }, { label: "Player", key: "player" }, { label: "Score", key: "score", num: true }, { label: "Region", key: "region" },
          { label: "Verdict", key: "verdict" }, { label: "Reason", key: "reason" }, { label: "Applied", key: "applied" }, { label: "", key: "action" }],
        rows: page.flags.map((f) => {
          const player = String(f.player_id);
          const hidden = hiddenIds.has(player);
          return [
            fmtTime(f.occurred_at), h("a", { href: link(["boards", boardId, "players", player]), text: player }), fmtNumber(f.score), f.region || "",
            h("span", { class: "badge flag", text: String(f.hook_verdict) }), String(f.hook_reason || ""), f.applied ? "yes" : "no",
            h("button", {
              type: "button", class: "secondary small", "data-testid": `hide-${player}`, "aria-label": hidden ? `${player} is hidden` : `Hide ${player}`,
              disabled: hidden, text: hidden ? "Hidden" : "Hide",
              onclick: async (event) => {
                const button = event.currentTarget;
                button.disabled = true;
                try {
                  const why = `flagged by the validation hook: ${f.hook_reason || f.hook_verdict}`.slice(0, 500);
                  await state.client.hidePlayer(boardId, player, why);
                  statusBox.replaceChildren(h("p", { class: "ok", "data-done": "hidden", text: `${player} is hidden on ${boardId}: public reads leave them out.` }));
                  await loadHidden();
                  await loadFlags();
                } catch (e) {
                  button.disabled = false;
                  showError(errorBox, e);
                }
              },
            }),
          ];
        }),
        rowAttrs: (i) => ({ "data-player": String(page.flags[i].player_id), "data-event": String(page.flags[i].event_id) }),
        empty: verdict === "flag" ? "No flagged submissions." : "No failed-open submissions.",
      }),
      pager({
        testid: "flags-pager",
        label: "Pages of flagged submissions",
        info: before ? "older" : "newest",
        prev: before ? link(["moderation", boardId], { verdict: query.verdict, after: query.after, before: prev || undefined }) : null,
        next: page.next ? link(["moderation", boardId], { verdict: query.verdict, after: query.after, before: page.next }) : null,
      }),
    );
  };

  main().append(
    h("p", { class: "crumbs" }, h("a", { href: "#/moderation", text: "Moderation" }), " / ", h("a", { href: link(["boards", boardId]), text: boardId })),
    h("p", { "data-testid": "hook-info" }, board.validation_hook
      ? `Validation hook ${board.validation_hook.target} (${board.validation_hook.timeout_ms} ms, fails ${board.validation_hook.on_failure}).`
      : "This board has no validation hook: nothing is flagged."),
    statusBox, errorBox, flagsBox, hiddenBox,
  );
  await loadHidden();
  await loadFlags();
  ready(view);
}

// ---- tournaments --------------------------------------------------------------------------------

async function tournamentsView(query) {
  const view = startView("tournaments", "Tournaments", "tournaments");
  const status = ["open", "upcoming", "ended"].includes(query.status) ? query.status : "";
  const page = intParam(query.page, 0);
  main().append(
    h("nav", { class: "row", "aria-label": "Tournament status", "data-testid": "tournament-filter" },
      [["", "All"], ["open", "Open"], ["upcoming", "Upcoming"], ["ended", "Ended"]].map(([value, label]) =>
        h("a", {
          class: `button ${value === status ? "" : "secondary"} small`, href: link(["tournaments"], { status: value }),
          "aria-current": value === status ? "page" : null, "data-status": value || "all", text: label,
        }))),
  );
  const list = await state.client.listTournaments(status || undefined);
  if (!view.alive()) return;
  const from = Math.min(page * TOURNAMENTS_PAGE, Math.max(0, list.length - 1));
  const shown = list.slice(from, from + TOURNAMENTS_PAGE);
  main().append(
    h("section", { class: "panel" },
      table({
        caption: `${status ? `${status[0].toUpperCase()}${status.slice(1)} tournaments` : "Tournaments: open, upcoming, then ended"}`,
        testid: "tournaments",
        columns: [{ label: "Tournament", key: "board" }, { label: "Status", key: "status" }, { label: "Window", key: "window" }, { label: "Sign-up", key: "signup" },
          { label: "Players (cap)", key: "players", num: true }, { label: "Attempts (each)", key: "attempts", num: true }, { label: "Recurrence", key: "recurrence" }],
        rows: shown.map((t) => {
          const players = t.participants === null || t.participants === undefined ? "–" : fmtNumber(t.participants);
          const attempts = t.attempts === null || t.attempts === undefined ? "–" : fmtNumber(t.attempts);
          return [
            h("span", {}, h("a", { href: link(["tournaments", t.board_id]), text: t.board_id }), t.title ? ` ${t.title}` : ""),
            h("span", { class: `badge ${t.status}`, text: t.status }),
            `${fmtTime(t.starts_at)} – ${fmtTime(t.ends_at)}`,
            t.join_required ? "required" : "not required",
            `${players}${t.max_participants ? ` / ${fmtNumber(t.max_participants)}` : ""}`,
            t.max_attempts ? `${attempts} (${fmtNumber(t.max_attempts)} each)` : "– (unlimited)",
            t.recurrence ? `${t.recurrence.cron} (${t.recurrence.timezone}), ${Math.round(t.recurrence.duration_seconds / 60)} min` : "one-shot",
          ];
        }),
        rowAttrs: (i) => ({ "data-board": shown[i].board_id, "data-status": shown[i].status }),
        empty: status ? `No ${status} tournaments.` : "No tournaments.",
      }),
      h("p", { class: "hint", text: "Players: the window shown's sign-ups (or, without sign-up, who played it), against its cap. Attempts: its accepted submissions, counted when attempts are capped." }),
      pager({
        testid: "tournaments-pager",
        label: "Pages of tournaments",
        info: pageInfo(from, shown.length, list.length),
        prev: from > 0 ? link(["tournaments"], { status, page: page - 1 }) : null,
        next: from + TOURNAMENTS_PAGE < list.length ? link(["tournaments"], { status, page: page + 1 }) : null,
      })),
  );
  ready(view);
}

async function tournamentView(boardId, query) {
  const view = startView("tournament", `Tournament ${boardId}`, "tournaments");
  const [board, periods, summaries] = await Promise.all([
    state.client.getBoard(boardId), state.client.listPeriods(boardId), state.client.listTournaments(),
  ]);
  if (!view.alive()) return;
  const summary = summaries.find((t) => t.board_id === boardId);
  if (board.title) $("main-heading").textContent = `Tournament ${board.title} (${boardId})`;
  const windows = periods.periods.filter((p) => p.kind === "custom");
  const period = query.period || (summary && summary.period) || (windows[0] && windows[0].period);
  const offset = intParam(query.offset, 0, 999_999_999);
  const box = h("div", { "data-testid": "tournament-standings-box" });
  const error = h("div", { class: "error-box", role: "alert" });
  main().append(
    h("p", { class: "crumbs" }, h("a", { href: "#/tournaments", text: "Tournaments" }), " / ", h("a", { href: link(["boards", boardId]), text: boardId })),
    h("section", { class: "panel" },
      h("p", { "data-testid": "tournament-rules" }, summary ? h("span", { class: `badge ${summary.status}`, text: summary.status }) : null, board.tournament ? tournamentRules(board.tournament) : "Not a tournament."),
      table({
        caption: "Windows",
        testid: "windows",
        columns: [{ label: "Window", key: "period" }, { label: "Status", key: "status" }, { label: "Starts", key: "starts" }, { label: "Ends", key: "ends" }, { label: "Players", key: "entries", num: true }, { label: "", key: "action" }],
        rows: windows.slice(0, PERIODS_PAGE).map((p) => [p.period, h("span", { class: `badge ${p.status}`, text: p.status }), fmtTime(p.starts_at), fmtTime(p.ends_at), fmtNumber(p.entries ?? 0),
          p.status === "upcoming" ? "" : h("a", { href: link(["tournaments", boardId], { period: p.period }), "aria-label": `Standings of ${p.period}`, text: "Standings" })]),
        rowAttrs: (i) => ({ "data-period": windows[i].period }),
        empty: "No window yet.",
      })),
    h("section", { class: "panel", "aria-labelledby": "standings-title" }, h("h3", { id: "standings-title", text: `Standings${period ? ` of ${period}` : ""}` }), box, error),
  );
  if (period) {
    try {
      const page = await state.client.entries(boardId, { period, offset, limit: ENTRIES_PAGE });
      if (!view.alive()) return;
      box.append(
        table({
          caption: `${fmtNumber(page.total)} player${page.total === 1 ? "" : "s"}`,
          testid: "tournament-standings",
          columns: [{ label: "Rank", key: "rank", num: true }, { label: "Player", key: "player" }, { label: "Score", key: "score", num: true }, { label: "Name", key: "name" }],
          rows: page.entries.map((e) => [String(e.rank), h("a", { href: link(["boards", boardId, "players", e.player_id]), text: e.player_id }), fmtNumber(e.score), displayName(e.metadata)]),
          rowAttrs: (i) => ({ "data-player": page.entries[i].player_id }),
          empty: "Nobody has played this window yet.",
        }),
        pager({
          testid: "tournament-pager",
        label: "Pages of standings",
          info: pageInfo(offset, page.entries.length, page.total),
          prev: offset > 0 ? link(["tournaments", boardId], { period, offset: Math.max(0, offset - ENTRIES_PAGE) }) : null,
          next: offset + ENTRIES_PAGE < page.total ? link(["tournaments", boardId], { period, offset: offset + ENTRIES_PAGE }) : null,
        }),
      );
    } catch (e) {
      if (e instanceof NotFound) box.append(h("p", { class: "empty", "data-testid": "tournament-standings-empty", text: "No standings yet: nobody has played this window." }));
      else showError(error, e);
    }
  }
  ready(view);
}

// ---- start ----------------------------------------------------------------------------------------

async function boot() {
  state.config = await loadConfig();
  const { config } = state;
  state.client = new LeaderboardClient({
    baseUrl: config.apiUrl,
    token: () => state.token,
    retries: 2,
    maxRetryAfterMs: 3000,
    timeoutMs: 10_000,
    requestInit: { cache: "no-store", credentials: "omit" },
    live: config.live || undefined,
  });
  $("api-origin").textContent = `API: ${config.apiUrl || location.origin}`;
  $("sign-out").addEventListener("click", () => signOut(""));
  $("skip-link").addEventListener("click", (event) => {
    event.preventDefault();
    focusHeading();
  });
  window.addEventListener("hashchange", () => {
    clearFlashOnNavigation();
    const handed = takeTokenFromUrl(); // a sign-in page handing a token back to this same page
    if (handed) void signIn(handed, $("sign-in-error") || h("div"));
    else route();
  });

  const handedBack = takeTokenFromUrl();
  const stored = handedBack || readStoredToken();
  if (stored) {
    renderSignIn("");
    const ok = await signIn(stored, $("sign-in-error"));
    if (ok && handedBack) flash("Signed in; the token was removed from the address bar.");
    return;
  }
  renderSignIn("");
}

function clearFlashOnNavigation() {
  if (Date.now() - flashedAt > 1000) clearFlash();
}

boot();
