"""Request parsing, authorization context and the one place domain errors become responses."""

from __future__ import annotations

import base64
import json
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError

from leaderboard.api.bearer import TokenVerifier, bearer_token
from leaderboard.api.observability import logger, metrics
from leaderboard.domain.auth import Caller, caller_from_claims
from leaderboard.domain.errors import (
    BadRequest,
    DomainError,
    InvalidToken,
    PayloadTooLarge,
    RateLimited,
    Unavailable,
)
from leaderboard.domain.validation import (
    MAX_BODY_BYTES,
    known_params,
    parse_json_object,
    require_board_id,
    require_player_id,
)
from leaderboard.settings import TokenSettings


def json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=json.dumps(body, separators=(",", ":")),
        headers=headers or {},
    )


def create_app() -> APIGatewayHttpResolver:
    """A resolver whose errors always answer JSON with a `message`."""
    app = APIGatewayHttpResolver(strip_prefixes=None)

    @app.exception_handler(DomainError)
    def domain_error(exc: DomainError) -> Response:
        headers = {}
        if isinstance(exc, (RateLimited, Unavailable)):
            headers["Retry-After"] = str(exc.retry_after)
        if exc.status == 401:
            headers["WWW-Authenticate"] = "Bearer"  # as the authorizer's own 401 says
        if exc.status >= 500:
            logger.warning(
                "store unavailable", extra={"error": exc.message, "cause": repr(exc.__cause__)}
            )
        metrics.add_metric(name=f"Http{exc.status}", unit="Count", value=1)
        return json_response(exc.status, exc.body(), headers)

    @app.not_found
    def malformed_path(exc: NotFoundError) -> Response:
        """API Gateway routed the request here, so the route exists: the resolver only misses
        it when a path segment holds characters no identifier allows (`"`, a backslash...)."""
        params = app.current_event.path_parameters or {}
        try:
            if "board_id" in params:
                require_board_id(params["board_id"])
            if "player_id" in params:
                require_player_id(params["player_id"])
            raise BadRequest("the path is malformed")
        except BadRequest as error:
            return domain_error(error)

    @app.exception_handler(Exception)
    def unexpected(exc: Exception) -> Response:  # a bug: log it whole, answer plainly
        logger.exception("unhandled error")
        metrics.add_metric(name="Http500", unit="Count", value=1)
        return json_response(500, {"message": "internal error", "code": "internal"})

    return app


def _authorizer_jwt(app: APIGatewayHttpResolver) -> dict[str, Any]:
    """What API Gateway's JWT authorizer put in the request context (nothing on open routes)."""
    authorizer = (app.current_event.raw_event.get("requestContext") or {}).get("authorizer")
    jwt: dict[str, Any] = (authorizer or {}).get("jwt") or {}
    return jwt


def caller(app: APIGatewayHttpResolver) -> Caller:
    """The verified caller, from where API Gateway's JWT authorizer puts the claims."""
    jwt = _authorizer_jwt(app)
    return caller_from_claims(jwt.get("claims"), jwt.get("scopes"))


def token_verifier(settings: TokenSettings) -> TokenVerifier:
    """What verifies tokens on a function's open routes. A function makes it at cold start, so
    a wrong setting stops the start rather than the first request with a token; it is the
    function's own (not this module's), so handlers loaded side by side in one process (the
    tests, the local benchmarks) each keep their settings."""
    return TokenVerifier(settings)


def optional_caller(app: APIGatewayHttpResolver, verifier: TokenVerifier) -> Caller | None:
    """Who sends this request on a route that needs no token: None without an Authorization
    header; the authorizer's claims if a route has one; else the header's bearer token,
    verified here as the authorizer would (InvalidToken, 401, when it is not a valid one;
    Unavailable, 503, when the issuer's keys cannot be fetched)."""
    jwt = _authorizer_jwt(app)
    if jwt.get("claims"):
        return caller_from_claims(jwt["claims"], jwt.get("scopes"))
    value = header(app, "authorization")
    if value is None:
        return None
    token = bearer_token(value)
    try:
        if token is None:
            raise InvalidToken("the Authorization header is not `Bearer <JWT>`")
        return verifier.caller(token)
    except InvalidToken as refused:
        logger.info("bearer token refused", extra={"reason": refused.reason})
        raise


def query(app: APIGatewayHttpResolver) -> dict[str, str | None]:
    return dict(app.current_event.query_string_parameters or {})


def no_query(app: APIGatewayHttpResolver) -> None:
    """Routes without query parameters refuse any (400), as the others refuse unknown ones."""
    known_params(query(app), ())


def json_body(
    app: APIGatewayHttpResolver, *, required: bool = True, max_bytes: int = MAX_BODY_BYTES
) -> dict[str, Any]:
    """The body as a JSON object; bytes are decoded here so invalid UTF-8 is a 400."""
    event = app.current_event.raw_event
    raw = event.get("body")
    if raw is None:
        return parse_json_object(None, required=required)
    if len(raw) > max_bytes * 4 // 3 + 4:
        raise PayloadTooLarge(f"request body exceeds {max_bytes} bytes")
    if event.get("isBase64Encoded"):
        try:
            data = base64.b64decode(raw, validate=True)
        except ValueError:
            raise BadRequest("request body is not valid base64") from None
        return parse_json_object(data, required=required, max_bytes=max_bytes)
    return parse_json_object(raw, required=required, max_bytes=max_bytes)


def header(app: APIGatewayHttpResolver, name: str) -> str | None:
    """A request header; HTTP API payload 2.0 delivers header names in lower case."""
    value: str | None = app.current_event.headers.get(name.lower())
    return value
