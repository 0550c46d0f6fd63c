"""The synchronous client: stdlib HTTP (urllib) and `websockets`' sync client."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Generic, TypeVar

from websockets.exceptions import ConnectionClosed, InvalidURI, WebSocketException
from websockets.sync.client import ClientConnection, connect
from websockets.typing import Subprotocol

from . import _live, _routes
from ._base import ClientBase
from ._core import Answer, Call, outcome
from ._live import (
    BoardFollower,
    BoardUpdate,
    Follower,
    LiveConfig,
    PlayerFollower,
    PlayerUpdate,
    ReconnectPolicy,
)
from .errors import ConnectionFailed, LeaderboardError
from .types import (
    AroundWindow,
    BatchItem,
    BatchResult,
    Board,
    BoardList,
    BoardSettings,
    EntriesPage,
    FlagsPage,
    Health,
    HiddenPlayerResult,
    HiddenPlayersPage,
    JoinResult,
    LeagueGroup,
    LeaguePlayer,
    LeagueTiers,
    Metadata,
    PeriodEnded,
    PeriodKind,
    PeriodList,
    PlayerHistory,
    PlayersSelection,
    PlayerStanding,
    PlayerStandings,
    RebuildReport,
    Score,
    SubmitResult,
    TournamentList,
    Watch,
)

__all__ = ["LeaderboardClient", "Subscription"]

T = TypeVar("T")
U = TypeVar("U")


class LeaderboardClient(ClientBase):
    """The API over HTTP, one method per route, and live subscriptions.

    `token` is the bearer token sent with every request (none: public reads only); `live`
    where the live updates are (needed by `subscribe_board` and `subscribe_player`). Errors
    are raised as `leaderboard_client.errors` exceptions; 429 and 503 are retried by `retry`.
    Thread-safe: each request opens its own connection."""

    def _send(self, call: Call[Any]) -> Answer:
        request = urllib.request.Request(  # noqa: S310 (the URL's scheme is checked: http(s))
            self._url(call),
            data=call.payload(),
            headers=call.headers(self.token, self.user_agent),
            method=call.method,
        )
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:  # noqa: S310
                return Answer(response.status, _lower(response.headers), response.read())
        except urllib.error.HTTPError as error:
            with error:
                return Answer(error.code, _lower(error.headers), error.read())
        except (urllib.error.URLError, http.client.HTTPException, OSError) as error:
            reason = getattr(error, "reason", error)
            raise ConnectionFailed(f"{call.method} {call.path}: {reason}") from error

    def _run(self, call: Call[T]) -> T:
        attempts = 0
        while True:
            attempts += 1
            try:
                return outcome(call, self._send(call))
            except LeaderboardError as error:
                delay = self._retry_delay(call, error, attempts)
                if delay is None:
                    raise
                time.sleep(delay)

    def close(self) -> None:
        """Nothing to release (a connection per request); for symmetry with the async one."""

    def __enter__(self) -> LeaderboardClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # Live --------------------------------------------------------------------------------

    def subscribe_board(
        self,
        board_id: str,
        period_kind: PeriodKind = "all-time",
        region: str | None = None,
        *,
        reconnect: ReconnectPolicy | None = None,
    ) -> Subscription[BoardUpdate]:
        """Follow a board channel: an iterator of `BoardUpdate`s that reconnects (jittered
        backoff), resubscribes, and reads `entries` once after each (re)subscribe and after a
        missed message. It connects on the first `next()` (or `get()`)."""
        live = self._live_config()
        follower = BoardFollower(live, board_id, period_kind, region)
        return Subscription(self, live, follower, reconnect or ReconnectPolicy())

    def subscribe_player(
        self,
        board_id: str,
        player_id: str,
        *,
        period: PeriodKind = "all-time",
        region: str | None = None,
        top_n: int | None = None,
        friends: Sequence[str] | None = None,
        ttl_seconds: int = 3600,
        renew_every: float | None = None,
        unwatch_on_close: bool = True,
        reconnect: ReconnectPolicy | None = None,
    ) -> Subscription[PlayerUpdate]:
        """Follow a player's channel with this client's token (the player's, or a server's):
        watch, subscribe, renew the watch every `ttl_seconds / 2` (or `renew_every`), read the
        player once after a missed message, and watch and subscribe again after a reconnect.
        Closing it ends the watch unless `unwatch_on_close` is False."""
        live = self._live_config()
        follower = PlayerFollower(
            live,
            self.token or "",
            board_id,
            player_id,
            period=period,
            region=region,
            top_n=top_n,
            friends=None if friends is None else list(friends),
            ttl_seconds=ttl_seconds,
            renew_every=renew_every,
        )
        return Subscription(
            self,
            live,
            follower,
            reconnect or ReconnectPolicy(),
            on_close=follower.unwatch() if unwatch_on_close else None,
        )

    # Boards ------------------------------------------------------------------------------

    def list_boards(self) -> BoardList:
        """`GET /boards`: every board, by id."""
        return self._run(_routes.list_boards())

    def get_board(self, board_id: str) -> Board:
        """`GET /boards/{board_id}`."""
        return self._run(_routes.get_board(board_id))

    def put_board(self, board_id: str, settings: BoardSettings | Mapping[str, Any]) -> Board:
        """`PUT /boards/{board_id}` (admin): create, or update what `settings` names."""
        return self._run(_routes.put_board(board_id, settings))

    # Submissions -------------------------------------------------------------------------

    def submit_score(
        self,
        board_id: str,
        score: Score,
        *,
        player_id: str | None = None,
        region: str | None = None,
        metadata: Metadata | None = None,
        tiebreakers: Mapping[str, int] | None = None,
        team_id: str | None = None,
        idempotency_key: str | None = None,
    ) -> SubmitResult:
        """`POST /boards/{board_id}/scores`. Without `idempotency_key` a new one is made, and
        kept for the retries of this call (a retry replays, never counts twice)."""
        return self._run(
            _routes.submit_score(
                board_id,
                score,
                player_id=player_id,
                region=region,
                metadata=metadata,
                tiebreakers=tiebreakers,
                team_id=team_id,
                idempotency_key=idempotency_key,
            )
        )

    def submit_scores(
        self, board_id: str, submissions: Sequence[BatchItem | Mapping[str, Any]]
    ) -> BatchResult:
        """`POST /boards/{board_id}/scores/batch` (server or admin): up to 500 items, each
        given an `idempotency_key` when it has none. Items fail alone: see `results`."""
        return self._run(_routes.submit_scores(board_id, submissions))

    # Reads -------------------------------------------------------------------------------

    def get_entries(
        self,
        board_id: str,
        *,
        period: str | None = None,
        region: str | None = None,
        limit: int | None = None,
        offset: int | None = None,
        around_rank: int | None = None,
        viewer: str | None = None,
        by: str | None = None,
        team: str | None = None,
    ) -> EntriesPage:
        """`GET /boards/{board_id}/entries`: a page of the ranking, or `around_rank`."""
        return self._run(
            _routes.get_entries(
                board_id,
                period=period,
                region=region,
                limit=limit,
                offset=offset,
                around_rank=around_rank,
                viewer=viewer,
                by=by,
                team=team,
            )
        )

    def get_player(
        self,
        board_id: str,
        player_id: str,
        *,
        period: str | None = None,
        region: str | None = None,
        viewer: str | None = None,
        by: str | None = None,
        team: str | None = None,
    ) -> PlayerStanding:
        """`GET /boards/{board_id}/players/{player_id}`: rank, score, total, top percent."""
        return self._run(
            _routes.get_player(
                board_id, player_id, period=period, region=region, viewer=viewer, by=by, team=team
            )
        )

    def get_around(
        self,
        board_id: str,
        player_id: str,
        *,
        period: str | None = None,
        region: str | None = None,
        count: int | None = None,
        viewer: str | None = None,
        by: str | None = None,
        team: str | None = None,
    ) -> AroundWindow:
        """`GET /boards/{board_id}/players/{player_id}/around`: the window around a player."""
        return self._run(
            _routes.get_around(
                board_id,
                player_id,
                period=period,
                region=region,
                count=count,
                viewer=viewer,
                by=by,
                team=team,
            )
        )

    def get_players(
        self,
        board_id: str,
        ids: Sequence[str],
        *,
        period: str | None = None,
        region: str | None = None,
        viewer: str | None = None,
        by: str | None = None,
        team: str | None = None,
    ) -> PlayersSelection:
        """`GET /boards/{board_id}/players?ids=...`: many players (friends) at once."""
        return self._run(
            _routes.get_players(
                board_id, ids, period=period, region=region, viewer=viewer, by=by, team=team
            )
        )

    def get_standings(
        self,
        board_id: str,
        player_id: str,
        *,
        region: str | None = None,
        viewer: str | None = None,
    ) -> PlayerStandings:
        """`GET /boards/{board_id}/players/{player_id}/standings`: every current period."""
        return self._run(_routes.get_standings(board_id, player_id, region=region, viewer=viewer))

    def get_history(
        self,
        board_id: str,
        player_id: str,
        *,
        kind: str | None = None,
        region: str | None = None,
        limit: int | None = None,
        before: str | None = None,
        viewer: str | None = None,
        by: str | None = None,
    ) -> PlayerHistory:
        """`GET /boards/{board_id}/players/{player_id}/history`: archived results."""
        return self._run(
            _routes.get_history(
                board_id,
                player_id,
                kind=kind,
                region=region,
                limit=limit,
                before=before,
                viewer=viewer,
                by=by,
            )
        )

    def list_periods(self, board_id: str) -> PeriodList:
        """`GET /boards/{board_id}/periods`: open, closed and archived periods."""
        return self._run(_routes.list_periods(board_id))

    def list_tournaments(self, *, status: str | None = None) -> TournamentList:
        """`GET /tournaments` (`status`: `open`, `upcoming` or `ended`)."""
        return self._run(_routes.list_tournaments(status=status))

    def health(self) -> Health:
        """`GET /health`; a degraded service answers too (`status: "degraded"`), not raises."""
        return self._run(_routes.health())

    # Leagues -----------------------------------------------------------------------------

    def get_league(self, board_id: str, *, season: str | None = None) -> LeagueTiers:
        """`GET /boards/{board_id}/league`: the rules and each tier's groups and players
        placed, this season (or `season`, a season's id)."""
        return self._run(_routes.get_league(board_id, season=season))

    def get_league_player(
        self,
        board_id: str,
        player_id: str,
        *,
        season: str | None = None,
        viewer: str | None = None,
    ) -> LeaguePlayer:
        """`GET /boards/{board_id}/league/players/{player_id}`: the player's own group, their
        rank and zone in it, and the promotion and relegation lines."""
        return self._run(
            _routes.get_league_player(board_id, player_id, season=season, viewer=viewer)
        )

    def get_league_group(
        self,
        board_id: str,
        group_id: str,
        *,
        season: str | None = None,
        viewer: str | None = None,
    ) -> LeagueGroup:
        """`GET /boards/{board_id}/league/groups/{group_id}`: any group of the season by
        its id (`gold-3`)."""
        return self._run(_routes.get_league_group(board_id, group_id, season=season, viewer=viewer))

    # Players -----------------------------------------------------------------------------

    def join(self, board_id: str, *, player_id: str | None = None) -> JoinResult:
        """`POST /boards/{board_id}/join`: sign up for a tournament (a player token signs
        itself up; a server or admin token names `player_id`)."""
        return self._run(_routes.join(board_id, player_id=player_id))

    def watch_player(
        self,
        board_id: str,
        player_id: str,
        *,
        period: PeriodKind | None = None,
        region: str | None = None,
        top_n: int | None = None,
        friends: Sequence[str] | None = None,
        ttl_seconds: int | None = None,
    ) -> Watch:
        """`PUT /boards/{board_id}/players/{player_id}/watch` (the player's token, or server
        or admin): watch for the player's channel. `subscribe_player` does it for you."""
        return self._run(
            _routes.watch_player(
                board_id,
                player_id,
                period=period,
                region=region,
                top_n=top_n,
                friends=friends,
                ttl_seconds=ttl_seconds,
            )
        )

    def unwatch_player(
        self,
        board_id: str,
        player_id: str,
        *,
        period: PeriodKind | None = None,
        region: str | None = None,
    ) -> None:
        """`DELETE /boards/{board_id}/players/{player_id}/watch`: end that watch."""
        return self._run(_routes.unwatch_player(board_id, player_id, period=period, region=region))

    # Admin -------------------------------------------------------------------------------

    def delete_player(self, board_id: str, player_id: str) -> None:
        """`DELETE /boards/{board_id}/players/{player_id}` (admin): every entry of the player."""
        return self._run(_routes.delete_player(board_id, player_id))

    def rebuild_board(self, board_id: str) -> RebuildReport:
        """`POST /boards/{board_id}/rebuild` (admin): serving data from PostgreSQL. Never
        resent after a lost answer (a retry of a 503 is safe: nothing was started)."""
        return self._run(_routes.rebuild_board(board_id))

    def list_flags(
        self,
        board_id: str,
        *,
        verdict: str | None = None,
        player_id: str | None = None,
        limit: int | None = None,
        before: str | None = None,
    ) -> FlagsPage:
        """`GET /boards/{board_id}/flags` (admin): submissions the validation hook flagged."""
        return self._run(
            _routes.list_flags(
                board_id, verdict=verdict, player_id=player_id, limit=limit, before=before
            )
        )

    def hide_player(
        self, board_id: str, player_id: str, *, reason: str | None = None
    ) -> HiddenPlayerResult:
        """`PUT /boards/{board_id}/hidden/{player_id}` (admin): a shadow ban."""
        return self._run(_routes.hide_player(board_id, player_id, reason=reason))

    def unhide_player(self, board_id: str, player_id: str) -> None:
        """`DELETE /boards/{board_id}/hidden/{player_id}` (admin): shown again."""
        return self._run(_routes.unhide_player(board_id, player_id))

    def list_hidden(
        self, board_id: str, *, limit: int | None = None, after: str | None = None
    ) -> HiddenPlayersPage:
        """`GET /boards/{board_id}/hidden` (admin): the players the board hides."""
        return self._run(_routes.list_hidden(board_id, limit=limit, after=after))

    def end_period(self, board_id: str) -> PeriodEnded:
        """`POST /boards/{board_id}/periods/end` (admin): end the current custom period now.
        Never resent after a lost answer: that would end the next period too."""
        return self._run(_routes.end_period(board_id))


def _lower(headers: Any) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in headers.items()} if headers else {}


class Subscription(Generic[U], Iterator[U]):
    """A live subscription: iterate it (`for update in sub`), or `get(timeout)`.

    `connections` counts the sockets it opened, `reconnects` those after the first,
    `refetches` the reads made after a missed message. `drop_connection()` and
    `drop_next_data_frames()` are for tests: the first cuts the socket as a network would, the
    second makes the subscription lose messages as if they never arrived."""

    def __init__(
        self,
        client: LeaderboardClient,
        live: LiveConfig,
        follower: Follower[U],
        policy: ReconnectPolicy,
        on_close: Call[None] | None = None,
    ) -> None:
        self.client = client
        self.live = live
        self.follower = follower
        self.policy = policy
        self.connections = 0
        self._on_close = on_close
        self._backoff = _live.Backoff(policy)
        self._pending: deque[U] = deque()
        self._ws: ClientConnection | None = None
        self._sub_id = ""
        self._timeout = _live.DEFAULT_CONNECTION_TIMEOUT
        self._last_frame = 0.0
        self._retry_at = 0.0
        self._last_poll = float("-inf")
        self._renew_at: float | None = None
        self._drop_frames = 0
        self._closed = False

    @property
    def reconnects(self) -> int:
        return max(0, self.connections - 1)

    @property
    def refetches(self) -> int:
        return self.follower.refetches

    def __iter__(self) -> Subscription[U]:
        return self

    def __next__(self) -> U:
        update = self.get()
        if update is None:
            raise StopIteration
        return update

    def get(self, timeout: float | None = None) -> U | None:
        """The next update; None after `timeout` seconds without one, or once closed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self._pending:
                return self._pending.popleft()
            if self._closed:
                return None
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                return None
            if self._ws is None:
                wait = self._retry_at - now
                if wait > 0:
                    time.sleep(wait if deadline is None else min(wait, deadline - now))
                    continue
                self._open()
            else:
                self._step(deadline)

    def _open(self) -> None:
        follower = self.follower
        ws: ClientConnection | None = None
        try:
            follower.prepared(self.client._run(follower.prepare()))
            # Entered as a context manager, as websockets asks from 17.1 on; closed by us.
            ws = contextlib.ExitStack().enter_context(
                connect(
                    self.live.realtime_url,
                    subprotocols=[Subprotocol(p) for p in self.live.subprotocols()],
                    open_timeout=self.policy.open_timeout,
                    compression=None,
                )
            )
            ws.send(_live.connection_init())
            ack = self._expect(ws, "connection_ack")
            self._timeout = _live.ack_timeout(ack)
            self._sub_id = _live.new_subscription_id()
            ws.send(_live.subscribe(self._sub_id, follower.channel, follower.authorization))
            self._expect(ws, "subscribe_success")
            call = follower.snapshot()
            snapshot = None if call is None else self.client._run(call)
        except InvalidURI:
            raise
        except (LeaderboardError, WebSocketException, OSError, TimeoutError) as error:
            if ws is not None:
                with contextlib.suppress(Exception):
                    ws.close()
            if not _live.transient(error) and not isinstance(error, WebSocketException):
                raise
            self._wait_and_poll()
            return
        self._ws = ws
        self.connections += 1
        self._backoff.reset()
        self._last_frame = time.monotonic()
        renewal = follower.renewal()
        self._renew_at = None if renewal is None else time.monotonic() + renewal[0]
        self._pending.append(follower.subscribed(snapshot))

    def _expect(self, ws: ClientConnection, kind: str) -> dict[str, Any]:
        deadline = time.monotonic() + self.policy.open_timeout
        while True:
            frame = _live.parse(ws.recv(timeout=max(0.0, deadline - time.monotonic())))
            if frame.get("type") == kind and frame.get("id", self._sub_id) == self._sub_id:
                return frame
            if frame.get("type") in ("connection_error", "subscribe_error", "error"):
                raise _live.refusal(frame)

    def _wait_and_poll(self) -> None:
        now = time.monotonic()
        self._retry_at = now + self._backoff.next_delay()
        if now - self._last_poll >= self.policy.poll_interval:
            self._last_poll = now
            with contextlib.suppress(LeaderboardError):
                self._pending.append(self.follower.polled(self.client._run(self.follower.poll())))

    def _step(self, deadline: float | None) -> None:
        assert self._ws is not None
        now = time.monotonic()
        if self._renew_at is not None and now >= self._renew_at:
            self._renew()
            return
        silent_until = self._last_frame + self._timeout
        if now >= silent_until:
            self._lost()  # nothing, not even a keep-alive, for connectionTimeoutMs
            return
        wait = silent_until - now
        if self._renew_at is not None:
            wait = min(wait, self._renew_at - now)
        if deadline is not None:
            wait = min(wait, deadline - now)
        try:
            raw = self._ws.recv(timeout=max(0.0, wait))
        except TimeoutError:
            return
        except ConnectionClosed:
            self._lost()
            return
        self._last_frame = time.monotonic()
        frame = _live.parse(raw)
        if frame.get("type") != "data" or frame.get("id") != self._sub_id:
            return  # ka, and answers of nothing this subscription waits for
        if self._drop_frames:
            self._drop_frames -= 1
            return
        event = frame.get("event")
        message = json.loads(event) if isinstance(event, str) else event
        if not isinstance(message, dict):
            return
        read = self.follower.gap_read(message)
        if read is False:
            return
        result: Any = None
        if read is not None:
            with contextlib.suppress(LeaderboardError):
                result = self.client._run(read)
        self._pending.append(self.follower.shown(message, result, read is not None))

    def _renew(self) -> None:
        renewal = self.follower.renewal()
        assert renewal is not None
        interval, call = renewal
        try:
            update = self.follower.renewed(self.client._run(call))
            if update is not None:
                self._pending.append(update)
        except LeaderboardError as error:
            if not _live.transient(error):
                raise
            interval = min(interval, 5.0)  # try again soon
        self._renew_at = time.monotonic() + interval

    def _lost(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                self._ws.close()
        self._ws = None
        self._retry_at = time.monotonic() + self._backoff.next_delay()

    # Test hooks --------------------------------------------------------------------------

    def drop_connection(self) -> None:
        """Cut the socket under the subscription, as a network failure would (for tests)."""
        if self._ws is not None:
            with contextlib.suppress(OSError):
                self._ws.socket.shutdown(socket.SHUT_RDWR)

    def drop_next_data_frames(self, count: int = 1) -> None:
        """Lose the next `count` data frames as if they never arrived (for tests)."""
        self._drop_frames += count

    # Closing -----------------------------------------------------------------------------

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._ws is not None:
            with contextlib.suppress(Exception):
                self._ws.send(_live.unsubscribe(self._sub_id))
            with contextlib.suppress(Exception):
                self._ws.close()
            self._ws = None
        if self._on_close is not None:
            with contextlib.suppress(LeaderboardError):
                self.client._run(self._on_close)

    def __enter__(self) -> Subscription[U]:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
