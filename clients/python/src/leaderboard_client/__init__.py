"""A typed Python client of the leaderboard service: every route of its HTTP API, sync
(`LeaderboardClient`) and asyncio (`AsyncLeaderboardClient`), with typed errors, idempotent
submissions, retries with backoff, and live subscriptions to board and player channels."""

from ._core import NO_RETRIES, RetryPolicy, __version__
from ._live import BoardUpdate, LiveConfig, PlayerUpdate, ReconnectPolicy
from .aio import AsyncLeaderboardClient, AsyncSubscription
from .client import LeaderboardClient, Subscription
from .errors import (
    BadRequest,
    Conflict,
    ConnectionFailed,
    Forbidden,
    HeaderTooLarge,
    HookUnavailable,
    LeaderboardError,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    RejectedByHook,
    ServerError,
    SubscriptionError,
    TournamentRules,
    Unauthorized,
    Unavailable,
    Unprocessable,
)

__all__ = [
    "NO_RETRIES",
    "AsyncLeaderboardClient",
    "AsyncSubscription",
    "BadRequest",
    "BoardUpdate",
    "Conflict",
    "ConnectionFailed",
    "Forbidden",
    "HeaderTooLarge",
    "HookUnavailable",
    "LeaderboardClient",
    "LeaderboardError",
    "LiveConfig",
    "NotFound",
    "PayloadTooLarge",
    "PlayerUpdate",
    "RateLimited",
    "ReconnectPolicy",
    "RejectedByHook",
    "RetryPolicy",
    "ServerError",
    "Subscription",
    "SubscriptionError",
    "TournamentRules",
    "Unauthorized",
    "Unavailable",
    "Unprocessable",
    "__version__",
]
