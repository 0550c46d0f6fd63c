"""Every route of docs/API.md "Routes at a glance", as a `Call` built once for both clients."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from ._core import NO_BODY, Call, query, segment
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


def new_idempotency_key() -> str:
    return uuid.uuid4().hex


def _board(board_id: str) -> str:
    return f"/boards/{segment(board_id)}"


def _player(board_id: str, player_id: str) -> str:
    return f"{_board(board_id)}/players/{segment(player_id)}"


def list_boards() -> Call[BoardList]:
    return Call("GET", "/boards")


def get_board(board_id: str) -> Call[Board]:
    return Call("GET", _board(board_id))


def put_board(board_id: str, settings: BoardSettings | Mapping[str, Any]) -> Call[Board]:
    return Call("PUT", _board(board_id), body=dict(settings))


def submit_score(
    board_id: str,
    score: Score,
    *,
    player_id: str | None,
    region: str | None,
    metadata: Metadata | None,
    tiebreakers: Mapping[str, int] | None,
    team_id: str | None,
    idempotency_key: str | None,
) -> Call[SubmitResult]:
    body: dict[str, Any] = {"score": score}
    for name, value in (
        ("player_id", player_id),
        ("region", region),
        ("metadata", metadata),
        ("tiebreakers", None if tiebreakers is None else dict(tiebreakers)),
        ("team_id", team_id),
    ):
        if value is not None:
            body[name] = value
    return Call(
        "POST",
        f"{_board(board_id)}/scores",
        body=body,
        idempotency_key=idempotency_key or new_idempotency_key(),
    )


def submit_scores(
    board_id: str, submissions: Sequence[BatchItem | Mapping[str, Any]]
) -> Call[BatchResult]:
    """Items without an `idempotency_key` get one, so that resending the batch replays them."""
    items = [
        dict(item)
        if item.get("idempotency_key")
        else {**item, "idempotency_key": new_idempotency_key()}
        for item in submissions
    ]
    return Call("POST", f"{_board(board_id)}/scores/batch", body={"submissions": items})


def get_entries(
    board_id: str,
    *,
    period: str | None,
    region: str | None,
    limit: int | None,
    offset: int | None,
    around_rank: int | None,
    viewer: str | None,
    by: str | None,
    team: str | None,
) -> Call[EntriesPage]:
    return Call(
        "GET",
        f"{_board(board_id)}/entries",
        query(
            period=period,
            region=region,
            limit=limit,
            offset=offset,
            around_rank=around_rank,
            viewer=viewer,
            by=by,
            team=team,
        ),
    )


def get_player(
    board_id: str,
    player_id: str,
    *,
    period: str | None,
    region: str | None,
    viewer: str | None,
    by: str | None,
    team: str | None,
) -> Call[PlayerStanding]:
    return Call(
        "GET",
        _player(board_id, player_id),
        query(period=period, region=region, viewer=viewer, by=by, team=team),
    )


def get_around(
    board_id: str,
    player_id: str,
    *,
    period: str | None,
    region: str | None,
    count: int | None,
    viewer: str | None,
    by: str | None,
    team: str | None,
) -> Call[AroundWindow]:
    return Call(
        "GET",
        f"{_player(board_id, player_id)}/around",
        query(period=period, region=region, count=count, viewer=viewer, by=by, team=team),
    )


def get_players(
    board_id: str,
    ids: Sequence[str],
    *,
    period: str | None,
    region: str | None,
    viewer: str | None,
    by: str | None,
    team: str | None,
) -> Call[PlayersSelection]:
    if isinstance(ids, str):
        raise TypeError("ids is a sequence of player ids, not one string")
    return Call(
        "GET",
        f"{_board(board_id)}/players",
        query(ids=",".join(ids), period=period, region=region, viewer=viewer, by=by, team=team),
    )


def get_standings(
    board_id: str, player_id: str, *, region: str | None, viewer: str | None
) -> Call[PlayerStandings]:
    return Call(
        "GET", f"{_player(board_id, player_id)}/standings", query(region=region, viewer=viewer)
    )


def get_history(
    board_id: str,
    player_id: str,
    *,
    kind: str | None,
    region: str | None,
    limit: int | None,
    before: str | None,
    viewer: str | None,
    by: str | None,
) -> Call[PlayerHistory]:
    return Call(
        "GET",
        f"{_player(board_id, player_id)}/history",
        query(kind=kind, region=region, limit=limit, before=before, viewer=viewer, by=by),
    )


def delete_player(board_id: str, player_id: str) -> Call[None]:
    return Call("DELETE", _player(board_id, player_id), empty=True)


def health() -> Call[Health]:
    # 503 is an answer here (the body lists what is unreachable), not an error to retry.
    return Call("GET", "/health", answers=frozenset({200, 503}))


def rebuild_board(board_id: str) -> Call[RebuildReport]:
    return Call("POST", f"{_board(board_id)}/rebuild", resend=False)


def list_flags(
    board_id: str,
    *,
    verdict: str | None,
    player_id: str | None,
    limit: int | None,
    before: str | None,
) -> Call[FlagsPage]:
    return Call(
        "GET",
        f"{_board(board_id)}/flags",
        query(verdict=verdict, player_id=player_id, limit=limit, before=before),
    )


def hide_player(board_id: str, player_id: str, *, reason: str | None) -> Call[HiddenPlayerResult]:
    body = {} if reason is None else {"reason": reason}
    return Call("PUT", f"{_board(board_id)}/hidden/{segment(player_id)}", body=body)


def unhide_player(board_id: str, player_id: str) -> Call[None]:
    return Call("DELETE", f"{_board(board_id)}/hidden/{segment(player_id)}", empty=True)


def list_hidden(board_id: str, *, limit: int | None, after: str | None) -> Call[HiddenPlayersPage]:
    return Call("GET", f"{_board(board_id)}/hidden", query(limit=limit, after=after))


def list_periods(board_id: str) -> Call[PeriodList]:
    return Call("GET", f"{_board(board_id)}/periods")


def end_period(board_id: str) -> Call[PeriodEnded]:
    # Sent again after a lost answer, it would end the next period too: never resent.
    return Call("POST", f"{_board(board_id)}/periods/end", resend=False)


def join(board_id: str, *, player_id: str | None) -> Call[JoinResult]:
    body = NO_BODY if player_id is None else {"player_id": player_id}
    return Call("POST", f"{_board(board_id)}/join", body=body)


def list_tournaments(*, status: str | None) -> Call[TournamentList]:
    return Call("GET", "/tournaments", query(status=status))


def get_league(board_id: str, *, season: str | None) -> Call[LeagueTiers]:
    return Call("GET", f"{_board(board_id)}/league", query(season=season))


def get_league_player(
    board_id: str, player_id: str, *, season: str | None, viewer: str | None
) -> Call[LeaguePlayer]:
    return Call(
        "GET",
        f"{_board(board_id)}/league/players/{segment(player_id)}",
        query(season=season, viewer=viewer),
    )


def get_league_group(
    board_id: str, group_id: str, *, season: str | None, viewer: str | None
) -> Call[LeagueGroup]:
    return Call(
        "GET",
        f"{_board(board_id)}/league/groups/{segment(group_id)}",
        query(season=season, viewer=viewer),
    )


def watch_player(
    board_id: str,
    player_id: str,
    *,
    period: str | None,
    region: str | None,
    top_n: int | None,
    friends: Sequence[str] | None,
    ttl_seconds: int | None,
) -> Call[Watch]:
    body: dict[str, Any] = {}
    if period is not None:
        body["period"] = period
    if region is not None:
        body["region"] = region
    if top_n is not None:
        body["top_n"] = top_n
    if friends is not None:
        body["friends"] = list(friends)
    if ttl_seconds is not None:
        body["ttl_seconds"] = ttl_seconds
    return Call("PUT", f"{_player(board_id, player_id)}/watch", body=body)


def unwatch_player(
    board_id: str, player_id: str, *, period: str | None, region: str | None
) -> Call[None]:
    return Call(
        "DELETE",
        f"{_player(board_id, player_id)}/watch",
        query(period=period, region=region),
        empty=True,
    )
