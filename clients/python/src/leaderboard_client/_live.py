"""Live subscriptions without I/O: the AppSync Events frames, the reconnect backoff, and what
docs/API.md "What a client does" prescribes for a board channel and for a player channel.

A follower says which HTTP calls to make (read the board, watch the player, read once after a
gap) and turns their results and the messages into updates; the sync and the asyncio drivers
(`client.py`, `aio.py`) do the I/O around it."""

from __future__ import annotations

import base64
import json
import random
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar, cast

from . import _routes
from ._core import Call
from .errors import (
    ConnectionFailed,
    LeaderboardError,
    RateLimited,
    ServerError,
    SubscriptionError,
    Unavailable,
)
from .types import (
    Board,
    BoardMessage,
    EntriesPage,
    PeriodKind,
    PlayerMessage,
    PlayerStanding,
    Watch,
)

PROTOCOL = "aws-appsync-event-ws"
DEFAULT_CONNECTION_TIMEOUT = 300.0  # connectionTimeoutMs of the docs, until the ack says


@dataclass(frozen=True)
class LiveConfig:
    """Where the live updates are: on AWS the stack outputs `LiveRealtimeUrl`, the host of
    `LiveHttpUrl` and `LiveApiKey`; locally `ws://127.0.0.1:3001/event/realtime`,
    `127.0.0.1:3002` and the key `make run` prints."""

    realtime_url: str
    http_host: str
    api_key: str

    @classmethod
    def from_stack_file(cls, path: str | Path) -> LiveConfig:
        """The `live` part of the local stack's `stack.json` (in its data folder)."""
        live = json.loads(Path(path).read_text())["live"]
        return cls(live["realtime_url"], live["http_host"], live["api_key"])

    def subprotocols(self) -> list[str]:
        header = {"host": self.http_host, "x-api-key": self.api_key}
        encoded = base64.urlsafe_b64encode(json.dumps(header).encode()).decode().rstrip("=")
        return [PROTOCOL, f"header-{encoded}"]


@dataclass(frozen=True)
class ReconnectPolicy:
    """Reconnects with jittered exponential backoff: attempt n waits a random time up to
    `base_delay * 2**(n-1)` seconds, at most `max_delay`; after a connection that worked, the
    count starts again. While the socket cannot connect, the state is read over HTTP every
    `poll_interval` seconds (docs: "poll entries every few seconds")."""

    base_delay: float = 0.5
    max_delay: float = 30.0
    poll_interval: float = 5.0
    open_timeout: float = 10.0


class Backoff:
    def __init__(self, policy: ReconnectPolicy) -> None:
        self.policy = policy
        self.failures = 0

    def next_delay(self) -> float:
        self.failures += 1
        ceiling = min(self.policy.max_delay, self.policy.base_delay * 2 ** (self.failures - 1))
        return random.uniform(0, ceiling)

    def reset(self) -> None:
        self.failures = 0


def transient(error: BaseException) -> bool:
    """Failures worth trying again later (the rest are raised to the caller)."""
    if isinstance(error, ConnectionFailed | Unavailable | RateLimited | ServerError):
        return True
    return not isinstance(error, LeaderboardError) and isinstance(error, OSError | TimeoutError)


# Frames ----------------------------------------------------------------------------------


def connection_init() -> str:
    return json.dumps({"type": "connection_init"})


def subscribe(sub_id: str, channel: str, authorization: Mapping[str, str]) -> str:
    return json.dumps(
        {"type": "subscribe", "id": sub_id, "channel": channel, "authorization": authorization}
    )


def unsubscribe(sub_id: str) -> str:
    return json.dumps({"type": "unsubscribe", "id": sub_id})


def parse(raw: str | bytes) -> dict[str, Any]:
    frame = json.loads(raw)
    if not isinstance(frame, dict):
        raise ValueError("a frame is a JSON object")
    return frame


def refusal(frame: Mapping[str, Any]) -> SubscriptionError:
    errors = frame.get("errors") or [{}]
    first = errors[0] if isinstance(errors, list) and errors else {}
    kind = str(first.get("errorType") or frame.get("type"))
    message = str(first.get("message") or kind)
    return SubscriptionError(f"{frame.get('type')}: {message}", code=kind, body=dict(frame))


def ack_timeout(frame: Mapping[str, Any]) -> float:
    millis = frame.get("connectionTimeoutMs")
    if isinstance(millis, int | float) and millis > 0:
        return float(millis) / 1000
    return DEFAULT_CONNECTION_TIMEOUT


# Updates ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class BoardUpdate:
    """What a board subscription yields.

    - `kind="subscribed"`: (re)subscribed and read `entries` once (the top to show now);
    - `kind="message"`: a `message`; `gap` when a message was missed before it, and then
      `entries` holds the one read made for it (None if that read failed);
    - `kind="polled"`: the socket cannot connect; `entries` read over HTTP meanwhile."""

    kind: Literal["subscribed", "message", "polled"]
    message: BoardMessage | None = None
    entries: EntriesPage | None = None
    gap: bool = False


@dataclass(frozen=True)
class PlayerUpdate:
    """What a player subscription yields.

    - `kind="watched"`: (re)watched and subscribed; `watch` is the answer (`rank`, `score`:
      the standing to start from);
    - `kind="message"`: a `message`; `gap` when one was missed before it, and then `standing`
      holds the one read of the player made for it (None: no entry, or the read failed);
    - `kind="polled"`: the socket cannot connect; `standing` read over HTTP meanwhile."""

    kind: Literal["watched", "message", "polled"]
    message: PlayerMessage | None = None
    watch: Watch | None = None
    standing: PlayerStanding | None = None
    gap: bool = False


U = TypeVar("U")


class Follower(Generic[U]):
    """What to call and what to yield; one subscription's state between reconnects."""

    channel: str = ""
    authorization: dict[str, str]
    refetches: int = 0

    def prepare(self) -> Call[Any]:
        raise NotImplementedError

    def prepared(self, result: Any) -> None:
        raise NotImplementedError

    def snapshot(self) -> Call[Any] | None:
        """A read to make once subscribed (None: the prepared answer is the snapshot)."""
        return None

    def subscribed(self, snapshot: Any) -> U:
        raise NotImplementedError

    def gap_read(self, message: Mapping[str, Any]) -> Call[Any] | Literal[False] | None:
        """False: ignore the message; None: show it; a call: read once (a gap), then show."""
        raise NotImplementedError

    def shown(self, message: Mapping[str, Any], read: Any, gap: bool) -> U:
        raise NotImplementedError

    def poll(self) -> Call[Any]:
        raise NotImplementedError

    def polled(self, result: Any) -> U:
        raise NotImplementedError

    def renewal(self) -> tuple[float, Call[Any]] | None:
        """(seconds between renewals, the call) for what expires unless renewed."""
        return None

    def renewed(self, result: Any) -> U | None:
        """A renewal's answer; an update if it tells something new."""
        return None


class BoardFollower(Follower[BoardUpdate]):
    """docs/API.md "What a client does": read the board for `live_channel`, subscribe, read
    `entries` once; keep the last version; a message whose `previous_version` is not the last
    seen follows a gap: read `entries` once, then go on."""

    def __init__(
        self, live: LiveConfig, board_id: str, period_kind: PeriodKind, region: str | None
    ) -> None:
        self.live = live
        self.board_id = board_id
        self.period_kind = period_kind
        self.region = region
        self.live_top = 10
        self.last_version: int | None = None
        self.authorization = {"host": live.http_host, "x-api-key": live.api_key}

    def prepare(self) -> Call[Board]:
        return _routes.get_board(self.board_id)

    def prepared(self, result: Any) -> None:
        board = cast(Board, result)
        self.live_top = board["live_top"]
        self.channel = f"{board['live_channel']}/{self.period_kind}"
        if self.region:
            self.channel += f"/{self.region}"

    def _entries(self) -> Call[EntriesPage]:
        return _routes.get_entries(
            self.board_id,
            period=self.period_kind,
            region=self.region,
            limit=self.live_top,
            offset=None,
            around_rank=None,
            viewer=None,
            by=None,
            team=None,
        )

    def snapshot(self) -> Call[EntriesPage]:
        return self._entries()

    def subscribed(self, snapshot: Any) -> BoardUpdate:
        self.last_version = None  # none right after a read
        return BoardUpdate("subscribed", entries=cast(EntriesPage, snapshot))

    def gap_read(self, message: Mapping[str, Any]) -> Call[EntriesPage] | Literal[False] | None:
        if message.get("type") != "leaderboard.changed":
            return False
        version = message.get("version")
        if not isinstance(version, int):
            return False
        last = self.last_version
        if last is not None and version <= last:
            return False  # old or repeated
        if last is not None and message.get("previous_version") != last:
            self.refetches += 1
            return self._entries()
        return None

    def shown(self, message: Mapping[str, Any], read: Any, gap: bool) -> BoardUpdate:
        self.last_version = int(message["version"])
        entries = cast(EntriesPage | None, read)
        return BoardUpdate("message", cast(BoardMessage, message), entries, gap)

    def poll(self) -> Call[EntriesPage]:
        return self._entries()

    def polled(self, result: Any) -> BoardUpdate:
        return BoardUpdate("polled", entries=cast(EntriesPage, result))


class PlayerFollower(Follower[PlayerUpdate]):
    """docs/API.md "What a client does on a player channel": watch (its `rank` is the last
    seen), subscribe with the player's token, renew the watch every `ttl_seconds / 2`; a
    message whose `previous_rank` is not the last rank seen follows a gap: read the player
    once, then go on. After a reconnect, watch and subscribe again."""

    def __init__(
        self,
        live: LiveConfig,
        token: str,
        board_id: str,
        player_id: str,
        *,
        period: PeriodKind,
        region: str | None,
        top_n: int | None,
        friends: list[str] | None,
        ttl_seconds: int,
        renew_every: float | None,
    ) -> None:
        if not token:
            raise ValueError("a player channel takes the player's (or a server's) token")
        self.board_id = board_id
        self.player_id = player_id
        self.period = period
        self.region = region
        self.top_n = top_n
        self.friends = friends
        self.ttl_seconds = ttl_seconds
        self.renew_every = renew_every if renew_every is not None else ttl_seconds / 2
        self.watch: Watch | None = None
        self.last_rank: int | None = None
        self.renewals = 0
        self.authorization = {"host": live.http_host, "Authorization": f"Bearer {token}"}

    def _watch(self) -> Call[Watch]:
        return _routes.watch_player(
            self.board_id,
            self.player_id,
            period=self.period,
            region=self.region,
            top_n=self.top_n,
            friends=self.friends,
            ttl_seconds=self.ttl_seconds,
        )

    def prepare(self) -> Call[Watch]:
        return self._watch()

    def prepared(self, result: Any) -> None:
        self.watch = cast(Watch, result)
        self.channel = self.watch["channel"]

    def subscribed(self, snapshot: Any) -> PlayerUpdate:
        assert self.watch is not None
        self.last_rank = self.watch["rank"]
        return PlayerUpdate("watched", watch=self.watch)

    def _read(self) -> Call[PlayerStanding]:
        return _routes.get_player(
            self.board_id,
            self.player_id,
            period=self.period,
            region=self.region,
            viewer=None,
            by=None,
            team=None,
        )

    def gap_read(self, message: Mapping[str, Any]) -> Call[PlayerStanding] | Literal[False] | None:
        if message.get("type") != "player.standing_changed":
            return False
        mine = (self.board_id, self.player_id, self.period, self.region)
        theirs = tuple(message.get(k) for k in ("board_id", "player_id", "period_kind", "region"))
        if theirs != mine:
            return False  # another watch of the same player
        if message.get("previous_rank") != self.last_rank:
            self.refetches += 1
            return self._read()
        return None

    def shown(self, message: Mapping[str, Any], read: Any, gap: bool) -> PlayerUpdate:
        self.last_rank = message.get("rank")
        standing = cast(PlayerStanding | None, read)
        return PlayerUpdate("message", cast(PlayerMessage, message), standing=standing, gap=gap)

    def poll(self) -> Call[PlayerStanding]:
        return self._read()

    def polled(self, result: Any) -> PlayerUpdate:
        return PlayerUpdate("polled", standing=cast(PlayerStanding, result))

    def renewal(self) -> tuple[float, Call[Any]]:
        return self.renew_every, self._watch()

    def renewed(self, result: Any) -> PlayerUpdate | None:
        # A renewal keeps the watch's chain (docs/API.md): a change before it is still told by
        # a message whose previous_rank is the last rank seen, so the answer moves nothing.
        self.renewals += 1
        self.watch = cast(Watch, result)
        return None

    def unwatch(self) -> Call[None]:
        return _routes.unwatch_player(
            self.board_id, self.player_id, period=self.period, region=self.region
        )


def new_subscription_id() -> str:
    return str(uuid.uuid4())
