"""The asyncio client: HTTP/1.1 over asyncio streams (stdlib) and `websockets`' asyncio
client. Same methods as the sync client, as coroutines."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Generic, TypeVar

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidURI, WebSocketException
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

__all__ = ["AsyncLeaderboardClient", "AsyncSubscription"]

T = TypeVar("T")
U = TypeVar("U")
MAX_HEAD = 64 * 1024
MAX_BODY = 64 * 1024 * 1024


class AsyncLeaderboardClient(ClientBase):
    """The asyncio twin of `LeaderboardClient`: the same methods, awaited. Each request opens
    its own connection (no pool to close); HTTP proxies are not used."""

    _ssl: ssl.SSLContext | None = None

    async def _send(self, call: Call[Any]) -> Answer:
        body = call.payload()
        headers = call.headers(self.token, self.user_agent)
        default_port = 443 if self.scheme == "https" else 80
        host = f"[{self.host}]" if ":" in self.host else self.host  # an IPv6 literal
        headers["Host"] = host if self.port == default_port else f"{host}:{self.port}"
        headers["Connection"] = "close"
        if body is not None or call.method in ("POST", "PUT"):
            headers["Content-Length"] = str(len(body or b""))
        head = f"{call.method} {self.prefix}{call.target()} HTTP/1.1\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in headers.items()
        )
        if self.scheme == "https" and self._ssl is None:
            self._ssl = ssl.create_default_context()
        try:
            async with asyncio.timeout(self.timeout):
                reader, writer = await asyncio.open_connection(
                    self.host, self.port, ssl=self._ssl if self.scheme == "https" else None
                )
                try:
                    writer.write(head.encode("latin-1") + b"\r\n" + (body or b""))
                    await writer.drain()
                    return await _read_answer(reader, call.method)
                finally:
                    writer.close()
                    with contextlib.suppress(OSError, ssl.SSLError):
                        await writer.wait_closed()
        except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as error:
            raise ConnectionFailed(f"{call.method} {call.path}: {error!r}") from error

    async def _run(self, call: Call[T]) -> T:
        attempts = 0
        while True:
            attempts += 1
            try:
                return outcome(call, await self._send(call))
            except LeaderboardError as error:
                delay = self._retry_delay(call, error, attempts)
                if delay is None:
                    raise
                await asyncio.sleep(delay)

    async def aclose(self) -> None:
        """Nothing to release (a connection per request); for `async with`."""

    async def __aenter__(self) -> AsyncLeaderboardClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # Live --------------------------------------------------------------------------------

    def subscribe_board(
        self,
        board_id: str,
        period_kind: PeriodKind = "all-time",
        region: str | None = None,
        *,
        reconnect: ReconnectPolicy | None = None,
    ) -> AsyncSubscription[BoardUpdate]:
        """As `LeaderboardClient.subscribe_board`, iterated with `async for`."""
        live = self._live_config()
        follower = BoardFollower(live, board_id, period_kind, region)
        return AsyncSubscription(self, live, follower, reconnect or ReconnectPolicy())

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
    ) -> AsyncSubscription[PlayerUpdate]:
        """As `LeaderboardClient.subscribe_player`, iterated with `async for`."""
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
        return AsyncSubscription(
            self,
            live,
            follower,
            reconnect or ReconnectPolicy(),
            on_close=follower.unwatch() if unwatch_on_close else None,
        )

    # Boards ------------------------------------------------------------------------------

    async def list_boards(self) -> BoardList:
        """`GET /boards`: every board, by id."""
        return await self._run(_routes.list_boards())

    async def get_board(self, board_id: str) -> Board:
        """`GET /boards/{board_id}`."""
        return await self._run(_routes.get_board(board_id))

    async def put_board(self, board_id: str, settings: BoardSettings | Mapping[str, Any]) -> Board:
        """`PUT /boards/{board_id}` (admin): create, or update what `settings` names."""
        return await self._run(_routes.put_board(board_id, settings))

    # Submissions -------------------------------------------------------------------------

    async def submit_score(
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
        return await self._run(
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

    async def submit_scores(
        self, board_id: str, submissions: Sequence[BatchItem | Mapping[str, Any]]
    ) -> BatchResult:
        """`POST /boards/{board_id}/scores/batch` (server or admin): up to 500 items, each
        given an `idempotency_key` when it has none. Items fail alone: see `results`."""
        return await self._run(_routes.submit_scores(board_id, submissions))

    # Reads -------------------------------------------------------------------------------

    async def get_entries(
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
        return await self._run(
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

    async def get_player(
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
        return await self._run(
            _routes.get_player(
                board_id, player_id, period=period, region=region, viewer=viewer, by=by, team=team
            )
        )

    async def get_around(
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
        return await self._run(
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

    async def get_players(
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
        return await self._run(
            _routes.get_players(
                board_id, ids, period=period, region=region, viewer=viewer, by=by, team=team
            )
        )

    async def get_standings(
        self,
        board_id: str,
        player_id: str,
        *,
        region: str | None = None,
        viewer: str | None = None,
    ) -> PlayerStandings:
        """`GET /boards/{board_id}/players/{player_id}/standings`: every current period."""
        return await self._run(
            _routes.get_standings(board_id, player_id, region=region, viewer=viewer)
        )

    async def get_history(
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
        return await self._run(
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

    async def list_periods(self, board_id: str) -> PeriodList:
        """`GET /boards/{board_id}/periods`: open, closed and archived periods."""
        return await self._run(_routes.list_periods(board_id))

    async def list_tournaments(self, *, status: str | None = None) -> TournamentList:
        """`GET /tournaments` (`status`: `open`, `upcoming` or `ended`)."""
        return await self._run(_routes.list_tournaments(status=status))

    async def health(self) -> Health:
        """`GET /health`; a degraded service answers too (`status: "degraded"`), not raises."""
        return await self._run(_routes.health())

    # Leagues -----------------------------------------------------------------------------

    async def get_league(self, board_id: str, *, season: str | None = None) -> LeagueTiers:
        """`GET /boards/{board_id}/league`: the rules and each tier's groups and players
        placed, this season (or `season`, a season's id)."""
        return await self._run(_routes.get_league(board_id, season=season))

    async def get_league_player(
        self,
        board_id: str,
        player_id: str,
        *,
        season: str | None = None,
        viewer: str | None = None,
    ) -> LeaguePlayer:
        """`GET /boards/{board_id}/league/players/{player_id}`: the player's own group, their
        rank and zone in it, and the promotion and relegation lines."""
        return await self._run(
            _routes.get_league_player(board_id, player_id, season=season, viewer=viewer)
        )

    async def get_league_group(
        self,
        board_id: str,
        group_id: str,
        *,
        season: str | None = None,
        viewer: str | None = None,
    ) -> LeagueGroup:
        """`GET /boards/{board_id}/league/groups/{group_id}`: any group of the season by
        its id (`gold-3`)."""
        return await self._run(
            _routes.get_league_group(board_id, group_id, season=season, viewer=viewer)
        )

    # Players -----------------------------------------------------------------------------

    async def join(self, board_id: str, *, player_id: str | None = None) -> JoinResult:
        """`POST /boards/{board_id}/join`: sign up for a tournament (a player token signs
        itself up; a server or admin token names `player_id`)."""
        return await self._run(_routes.join(board_id, player_id=player_id))

    async def watch_player(
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
        return await self._run(
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

    async def unwatch_player(
        self,
        board_id: str,
        player_id: str,
        *,
        period: PeriodKind | None = None,
        region: str | None = None,
    ) -> None:
        """`DELETE /boards/{board_id}/players/{player_id}/watch`: end that watch."""
        return await self._run(
            _routes.unwatch_player(board_id, player_id, period=period, region=region)
        )

    # Admin -------------------------------------------------------------------------------

    async def delete_player(self, board_id: str, player_id: str) -> None:
        """`DELETE /boards/{board_id}/players/{player_id}` (admin): every entry of the player."""
        return await self._run(_routes.delete_player(board_id, player_id))

    async def rebuild_board(self, board_id: str) -> RebuildReport:
        """`POST /boards/{board_id}/rebuild` (admin): serving data from PostgreSQL. Never
        resent after a lost answer (a retry of a 503 is safe: nothing was started)."""
        return await self._run(_routes.rebuild_board(board_id))

    async def list_flags(
        self,
        board_id: str,
        *,
        verdict: str | None = None,
        player_id: str | None = None,
        limit: int | None = None,
        before: str | None = None,
    ) -> FlagsPage:
        """`GET /boards/{board_id}/flags` (admin): submissions the validation hook flagged."""
        return await self._run(
            _routes.list_flags(
                board_id, verdict=verdict, player_id=player_id, limit=limit, before=before
            )
        )

    async def hide_player(
        self, board_id: str, player_id: str, *, reason: str | None = None
    ) -> HiddenPlayerResult:
        """`PUT /boards/{board_id}/hidden/{player_id}` (admin): a shadow ban."""
        return await self._run(_routes.hide_player(board_id, player_id, reason=reason))

    async def unhide_player(self, board_id: str, player_id: str) -> None:
        """`DELETE /boards/{board_id}/hidden/{player_id}` (admin): shown again."""
        return await self._run(_routes.unhide_player(board_id, player_id))

    async def list_hidden(
        self, board_id: str, *, limit: int | None = None, after: str | None = None
    ) -> HiddenPlayersPage:
        """`GET /boards/{board_id}/hidden` (admin): the players the board hides."""
        return await self._run(_routes.list_hidden(board_id, limit=limit, after=after))

    async def end_period(self, board_id: str) -> PeriodEnded:
        """`POST /boards/{board_id}/periods/end` (admin): end the current custom period now.
        Never resent after a lost answer: that would end the next period too."""
        return await self._run(_routes.end_period(board_id))


async def _read_answer(reader: asyncio.StreamReader, method: str) -> Answer:
    status_line = (await reader.readline()).decode("latin-1")
    parts = status_line.split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise ValueError(f"not an HTTP answer: {status_line[:80]!r}")
    status = int(parts[1])
    headers: dict[str, str] = {}
    size = 0
    while True:
        line = await reader.readline()
        size += len(line)
        if size > MAX_HEAD:
            raise ValueError("answer headers too large")
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
        return Answer(status, headers, b"")
    if "chunked" in headers.get("transfer-encoding", "").lower():
        chunks = []
        total = 0
        while True:
            size_line = await reader.readline()
            length = int(size_line.split(b";")[0].strip() or b"0", 16)
            if length == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            total += length
            if total > MAX_BODY:
                raise ValueError("answer body too large")
            chunks.append(await reader.readexactly(length))
            await reader.readline()
        return Answer(status, headers, b"".join(chunks))
    if "content-length" in headers:
        length = int(headers["content-length"])
        if length > MAX_BODY:
            raise ValueError("answer body too large")
        return Answer(status, headers, await reader.readexactly(length))
    return Answer(status, headers, await reader.read(MAX_BODY))


class AsyncSubscription(Generic[U], AsyncIterator[U]):
    """A live subscription for asyncio: `async for update in sub`, or `await sub.get(timeout)`.
    The same behaviour, counters and test hooks as the sync `Subscription`."""

    def __init__(
        self,
        client: AsyncLeaderboardClient,
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

    def __aiter__(self) -> AsyncSubscription[U]:
        return self

    async def __anext__(self) -> U:
        update = await self.get()
        if update is None:
            raise StopAsyncIteration
        return update

    async def get(self, timeout: float | None = None) -> U | None:
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
                    await asyncio.sleep(wait if deadline is None else min(wait, deadline - now))
                    continue
                await self._open()
            else:
                await self._step(deadline)

    async def _open(self) -> None:
        follower = self.follower
        ws: ClientConnection | None = None
        try:
            follower.prepared(await self.client._run(follower.prepare()))
            ws = await connect(
                self.live.realtime_url,
                subprotocols=[Subprotocol(p) for p in self.live.subprotocols()],
                open_timeout=self.policy.open_timeout,
                compression=None,
            )
            await ws.send(_live.connection_init())
            ack = await self._expect(ws, "connection_ack")
            self._timeout = _live.ack_timeout(ack)
            self._sub_id = _live.new_subscription_id()
            await ws.send(_live.subscribe(self._sub_id, follower.channel, follower.authorization))
            await self._expect(ws, "subscribe_success")
            call = follower.snapshot()
            snapshot = None if call is None else await self.client._run(call)
        except InvalidURI:
            raise
        except (LeaderboardError, WebSocketException, OSError, TimeoutError) as error:
            if ws is not None:
                with contextlib.suppress(Exception):
                    await ws.close()
            if not _live.transient(error) and not isinstance(error, WebSocketException):
                raise
            await self._wait_and_poll()
            return
        self._ws = ws
        self.connections += 1
        self._backoff.reset()
        self._last_frame = time.monotonic()
        renewal = follower.renewal()
        self._renew_at = None if renewal is None else time.monotonic() + renewal[0]
        self._pending.append(follower.subscribed(snapshot))

    async def _expect(self, ws: ClientConnection, kind: str) -> dict[str, Any]:
        async with asyncio.timeout(self.policy.open_timeout):
            while True:
                frame = _live.parse(await ws.recv())
                if frame.get("type") == kind and frame.get("id", self._sub_id) == self._sub_id:
                    return frame
                if frame.get("type") in ("connection_error", "subscribe_error", "error"):
                    raise _live.refusal(frame)

    async def _wait_and_poll(self) -> None:
        now = time.monotonic()
        self._retry_at = now + self._backoff.next_delay()
        if now - self._last_poll >= self.policy.poll_interval:
            self._last_poll = now
            with contextlib.suppress(LeaderboardError):
                result = await self.client._run(self.follower.poll())
                self._pending.append(self.follower.polled(result))

    async def _step(self, deadline: float | None) -> None:
        assert self._ws is not None
        now = time.monotonic()
        if self._renew_at is not None and now >= self._renew_at:
            await self._renew()
            return
        silent_until = self._last_frame + self._timeout
        if now >= silent_until:
            await self._lost()  # nothing, not even a keep-alive, for connectionTimeoutMs
            return
        wait = silent_until - now
        if self._renew_at is not None:
            wait = min(wait, self._renew_at - now)
        if deadline is not None:
            wait = min(wait, deadline - now)
        try:
            async with asyncio.timeout(max(0.0, wait)):
                raw = await self._ws.recv()
        except TimeoutError:
            return
        except ConnectionClosed:
            await self._lost()
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
                result = await self.client._run(read)
        self._pending.append(self.follower.shown(message, result, read is not None))

    async def _renew(self) -> None:
        renewal = self.follower.renewal()
        assert renewal is not None
        interval, call = renewal
        try:
            update = self.follower.renewed(await self.client._run(call))
            if update is not None:
                self._pending.append(update)
        except LeaderboardError as error:
            if not _live.transient(error):
                raise
            interval = min(interval, 5.0)  # try again soon
        self._renew_at = time.monotonic() + interval

    async def _lost(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        self._ws = None
        self._retry_at = time.monotonic() + self._backoff.next_delay()

    # Test hooks --------------------------------------------------------------------------

    def drop_connection(self) -> None:
        """Cut the socket under the subscription, as a network failure would (for tests)."""
        if self._ws is not None:
            self._ws.transport.abort()

    def drop_next_data_frames(self, count: int = 1) -> None:
        """Lose the next `count` data frames as if they never arrived (for tests)."""
        self._drop_frames += count

    # Closing -----------------------------------------------------------------------------

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.send(_live.unsubscribe(self._sub_id))
            with contextlib.suppress(Exception):
                await self._ws.close()
            self._ws = None
        if self._on_close is not None:
            with contextlib.suppress(LeaderboardError):
                await self.client._run(self._on_close)

    async def __aenter__(self) -> AsyncSubscription[U]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
