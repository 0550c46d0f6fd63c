"""Who may do what. Claims come from the JWT authorizer (API Gateway or the local gateway)."""

from __future__ import annotations

from dataclasses import dataclass

from leaderboard.domain.errors import Forbidden, Unauthorized

SERVER_SCOPE = "leaderboard/server"
ADMIN_SCOPE = "leaderboard/admin"


@dataclass(frozen=True, slots=True)
class Caller:
    subject: str
    scopes: frozenset[str]

    @property
    def is_admin(self) -> bool:
        return ADMIN_SCOPE in self.scopes

    @property
    def is_server(self) -> bool:
        return SERVER_SCOPE in self.scopes or self.is_admin


def caller_from_claims(claims: dict[str, object] | None, scopes: list[str] | None) -> Caller:
    """Build the caller from verified claims; no claims means no (valid) token."""
    if not claims or not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise Unauthorized("a valid bearer token is required")
    found = set(scopes or [])
    scope_claim = claims.get("scope")
    if isinstance(scope_claim, str):
        found.update(scope_claim.split())
    return Caller(subject=str(claims["sub"]), scopes=frozenset(found))


def require_admin(caller: Caller) -> None:
    if not caller.is_admin:
        raise Forbidden("this route needs the leaderboard/admin scope")


def submission_player(caller: Caller, requested: str | None) -> str:
    """The player a submission is for: players may only submit for themselves."""
    if requested is None:
        return caller.subject
    if requested != caller.subject and not caller.is_server:
        raise Forbidden("a player token may only submit scores for its own player_id")
    return requested
