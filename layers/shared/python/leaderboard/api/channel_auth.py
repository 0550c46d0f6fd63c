"""Who may subscribe to a player's channel: the Event API's Lambda authorizer, without AWS.

A player channel is `/players/<player segment>` (leaderboard.domain.live.player_segment). Only
that player, or a game server (`leaderboard/server` or `leaderboard/admin` scope), may subscribe
to it; a wildcard (`/players/*`) is a server's only (docs/API.md, "Player channels").

Two checks make that so in AWS. The authorizer (this module, in the function
PlayerChannelAuthorizerFunction) verifies the subscriber's bearer token by the read function's
rules and answers who the token is: the segment of its `sub`, and whether it is a server.
AppSync may cache that answer for the token and reuse it for the token's next subscriptions,
on other channels too, so the namespace's `onSubscribe` handler (template.yaml) compares each
channel with it. The authorizer compares the channel as well: a subscription needs both.

The request AppSync sends (operations EVENT_CONNECT, EVENT_PUBLISH, EVENT_SUBSCRIBE):
`{"authorizationToken": ..., "requestContext": {"apiId", "accountId", "requestId",
"operation", "channelNamespaceName", "channel"}, "requestHeaders": {...}}`; the answer:
`{"isAuthorized": bool, "handlerContext": {str: str}, "ttlOverride": seconds}`, where
`handlerContext` reaches the handlers as `ctx.identity.handlerContext` (string values only).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from leaderboard.api.bearer import TokenVerifier, bearer_token
from leaderboard.domain.auth import caller_from_claims
from leaderboard.domain.errors import DomainError, InvalidToken, Unavailable
from leaderboard.domain.live import PLAYER_NAMESPACE, player_segment

SUBSCRIBE = "EVENT_SUBSCRIBE"
# How long AppSync may keep a yes for a token (never past the token's expiry). Short enough
# that a withdrawn key or a revoked scope stops new subscriptions within minutes.
MAX_TTL_SECONDS = 300
WILDCARD = "*"
ISSUER_UNAVAILABLE = "the token issuer's keys cannot be fetched"
MAX_CHANNEL_CHARS = 1024  # far more than 5 segments of 50 characters


@dataclass(frozen=True, slots=True)
class Decision:
    """The authorizer's answer, and why (for the log; never sent to the subscriber)."""

    authorized: bool
    reason: str
    context: dict[str, str] = field(default_factory=dict)
    ttl: int = 0  # a refusal is never cached: the next attempt is judged again

    def response(self) -> dict[str, Any]:
        if not self.authorized:
            return {"isAuthorized": False, "ttlOverride": 0}
        return {"isAuthorized": True, "handlerContext": dict(self.context), "ttlOverride": self.ttl}


def refuse(reason: str) -> Decision:
    return Decision(authorized=False, reason=reason)


def channel_segments(channel: Any, namespace: str) -> list[str] | None:
    """The segments below the namespace of a channel path (`/players/P…` -> [`P…`]), or None
    when the value is not a channel of that namespace."""
    if not isinstance(channel, str) or len(channel) > MAX_CHANNEL_CHARS:
        return None
    parts = channel.split("/")
    if len(parts) < 3 or parts[0] != "" or parts[1] != namespace:
        return None
    below = parts[2:]
    return below if all(below) else None


def may_subscribe(segments: list[str], segment: str, server: bool) -> bool:
    """The onSubscribe rule: a server any channel of the namespace (wildcards included), a
    player its own channel only, exactly, never through a wildcard."""
    if server:
        return True
    return segments == [segment] and segment != WILDCARD


def decide(
    event: Any,
    verifier: TokenVerifier,
    *,
    namespace: str = PLAYER_NAMESPACE,
    clock: Callable[[], float] = time.time,
) -> Decision:
    """Judge one authorization request. Anything unexpected is a refusal with its reason,
    never an exception: the subscriber is told UnauthorizedException either way, and the
    reason goes to the log rather than into a failed invocation."""
    if not isinstance(event, dict):
        return refuse("the request is not an object")
    context = event.get("requestContext")
    if not isinstance(context, dict):
        return refuse("the request has no requestContext")
    operation = context.get("operation")
    if operation != SUBSCRIBE:
        # Connections take the API key and publishing IAM: this authorizer allows neither.
        return refuse(f"operation {operation!r} is not a subscribe")
    if context.get("channelNamespaceName") != namespace:
        return refuse(f"namespace {context.get('channelNamespaceName')!r} is not {namespace!r}")
    segments = channel_segments(context.get("channel"), namespace)
    if segments is None:
        return refuse("the channel is not a channel of the namespace")
    authorization = event.get("authorizationToken")
    token = bearer_token(authorization) if isinstance(authorization, str) else None
    if token is None:
        return refuse("the authorization is not `Bearer <JWT>`")
    try:
        claims = verifier.claims(token)
        caller = caller_from_claims(claims, None)
    except InvalidToken as invalid:
        return refuse(f"invalid token: {invalid.reason}")
    except Unavailable:
        return refuse(ISSUER_UNAVAILABLE)
    except DomainError as error:
        return refuse(f"invalid token: {error.message}")
    segment = player_segment(caller.subject)
    if not may_subscribe(segments, segment, caller.is_server):
        return refuse("a player token subscribes to another channel than its own")
    remaining = float(claims["exp"]) - clock()
    ttl = max(0, min(MAX_TTL_SECONDS, math.floor(remaining)))
    return Decision(
        authorized=True,
        reason="server" if caller.is_server else "own channel",
        context={"segment": segment, "server": "true" if caller.is_server else "false"},
        ttl=ttl,
    )
