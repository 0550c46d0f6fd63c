"""What Redis's answers and failures mean to a caller: a 503 for an unreachable index, and the
domain error for each refusal code of the submit and read scripts."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import ParamSpec, TypeVar

from redis.exceptions import BusyLoadingError, ClusterDownError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from leaderboard.domain.errors import (
    ArchivedPeriod,
    BoardMissing,
    Conflict,
    HookUnavailable,
    NotFound,
    RateLimited,
    RejectedByHook,
    TournamentRefused,
    Unavailable,
    Unprocessable,
)
from leaderboard.domain.hooks import REJECTED, UNAVAILABLE, Screening
from leaderboard.domain.periods import Period
from leaderboard.domain.score_tiers import Tiering
from leaderboard.domain.submissions import Submission

UNREACHABLE = (
    RedisConnectionError,
    RedisTimeoutError,
    BusyLoadingError,
    ClusterDownError,
    TryAgainError,
)
P = ParamSpec("P")
R = TypeVar("R")


def guarded(method: Callable[P, R]) -> Callable[P, R]:
    """An unreachable serving index is a 503 with Retry-After, never a 500."""

    @wraps(method)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(*args, **kwargs)
        except UNREACHABLE as exc:
            raise Unavailable(
                "the serving index (Redis) is unavailable", retry_after=1, store="redis"
            ) from exc

    return call


def submit_error(
    board_id: str, submission: Submission, detail: list[str], screening: Screening | None = None
) -> Exception:
    code = detail[0]
    if code == REJECTED:
        reason = screening.reason if screening is not None else None
        return RejectedByHook(reason or "the board's validation hook rejected this submission")
    if code == UNAVAILABLE:
        return HookUnavailable(
            "the board's validation hook did not answer in time or failed, and the board "
            "fails closed: nothing was written; retry later",
            retry_after=1,
        )
    if code == "no_board":
        return BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
    if code == "league_settling":
        return Unavailable(
            "the league's last two seasons are not settled yet (the rollover is behind): a "
            "player's group this season cannot be chosen; retry shortly",
            retry_after=5,
            store="redis",
        )
    if code == "idempotency_conflict":
        return Conflict("this Idempotency-Key was already used with a different request body")
    if code == "unknown_region":
        return Unprocessable(
            f"region {submission.region!r} is not one of the board's regions", field="region"
        )
    if code == "tiebreakers":
        return Unprocessable(
            "tiebreakers must give exactly the board's tie-breaker columns (a board without "
            "tie-breakers takes none)",
            field="tiebreakers",
        )
    if code == "teams":
        return Unprocessable(
            "team_id names a team, but this board keeps no team rankings (its `teams` is null)",
            field="team_id",
        )
    if code == "max_increment":
        return Unprocessable("score exceeds the board's max_increment", field="score")
    if code == "bounds":
        where = f" for period {detail[1]}" if len(detail) > 1 and detail[1] else ""
        return Unprocessable(
            f"the resulting score{where} would fall outside the board's bounds "
            "(min_score/max_score, or 2^53-1)",
            field="score",
        )
    if code == "tournament":
        reason = detail[1] if len(detail) > 1 else ""
        return TournamentRefused(reason)
    if code == "rate_limited":
        retry_ms = int(detail[1])
        return RateLimited(
            "too many submissions for this player; retry later", retry_after=-(-retry_ms // 1000)
        )
    return RuntimeError(f"unexpected reply from the submit script: {detail!r}")


def read_error(
    board_id: str,
    period: Period,
    region: str | None,
    player_id: str,
    code: str,
    tiering: Tiering | None = None,
) -> Exception:
    """A read script's refusal as the error it means (`tiering`: the board's score tiers, for
    the archive's read of an archived period)."""
    if code == "no_board":
        return BoardMissing(f"board {board_id!r} does not exist", board_id=board_id)
    if code == "no_period":
        return NotFound(f"board {board_id!r} does not keep {period.kind} periods", period=period.id)
    if code == "unknown_region":
        return NotFound(f"region {region!r} is not one of the board's regions", region=region)
    if code == "archived":
        return ArchivedPeriod(f"period {period.id} is archived", tiering=tiering, period=period.id)
    if code == "no_player":
        return NotFound(
            f"player {player_id!r} has no entry in {period.id}"
            + (f" ({region})" if region else ""),
            player_id=player_id,
        )
    if code == "no_teams":
        return NotFound(f"board {board_id!r} keeps no team rankings", board_id=board_id)
    return RuntimeError(f"unexpected reply from the read script: {code!r}")
