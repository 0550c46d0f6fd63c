"""Configuration from environment variables, validated once at cold start.

A function asks only for what it uses; a missing or malformed variable stops the cold start with
a message naming it, rather than failing on the first request.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from leaderboard.domain.errors import ConfigurationError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_flag(name: str, default: bool = False) -> bool:
    """A boolean setting: true/false, 1/0, yes/no, on/off; anything else stops the start."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigurationError(f"{name} must be true or false, not {raw!r}")


def _int(name: str, default: int, minimum: int, maximum: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, not {raw!r}") from None
    if not minimum <= value <= maximum:
        raise ConfigurationError(f"{name} must be between {minimum} and {maximum}")
    return value


def _url(name: str, schemes: tuple[str, ...]) -> str:
    raw = os.environ.get(name, "").strip()
    if not raw:
        raise ConfigurationError(f"{name} is required")
    if urlsplit(raw).scheme not in schemes:
        raise ConfigurationError(f"{name} must be a {' or '.join(schemes)} URL")
    return raw


@dataclass(frozen=True, slots=True)
class RedisSettings:
    url: str
    cluster: bool
    idempotency_ttl_seconds: int
    # Replicas that must confirm a submission before it is acknowledged (0: none asked).
    replica_acks: int = 0
    replica_ack_timeout_ms: int = 100

    @classmethod
    def from_env(cls) -> RedisSettings:
        return cls(
            url=_url("REDIS_URL", ("redis", "rediss", "valkey", "valkeys")).replace(
                "valkey", "redis", 1
            ),
            cluster=env_flag("REDIS_CLUSTER"),
            idempotency_ttl_seconds=_int("IDEMPOTENCY_TTL_SECONDS", 90_000, 86_400, 2_592_000),
            replica_acks=_int("REDIS_REPLICA_ACKS", 0, 0, 5),
            replica_ack_timeout_ms=_int("REDIS_REPLICA_ACK_TIMEOUT_MS", 100, 1, 5_000),
        )


@dataclass(frozen=True, slots=True)
class QueueSettings:
    queue_url: str
    endpoint_url: str | None

    @classmethod
    def from_env(cls) -> QueueSettings:
        return cls(
            queue_url=_url("SCORE_QUEUE_URL", ("https", "http")),
            endpoint_url=os.environ.get("SQS_ENDPOINT_URL") or None,
        )


@dataclass(frozen=True, slots=True)
class DatabaseSettings:
    """Either DATABASE_URL (local stack, an existing database), or in AWS the proxy endpoint
    (DATABASE_HOST) and the Secrets Manager secret holding the credentials
    (DATABASE_SECRET_ID, an ARN or a name), read on the first connection, never at cold
    start."""

    url: str
    secret_id: str | None = None

    @classmethod
    def from_env(cls) -> DatabaseSettings:
        if os.environ.get("DATABASE_URL"):
            return cls(url=_url("DATABASE_URL", ("postgresql", "postgres")))
        host = os.environ.get("DATABASE_HOST", "").strip()
        secret = os.environ.get("DATABASE_SECRET_ID", "").strip()
        if not host or not secret:
            raise ConfigurationError(
                "DATABASE_URL, or DATABASE_HOST with DATABASE_SECRET_ID, is required"
            )
        port = _int("DATABASE_PORT", 5432, 1, 65535)
        name = os.environ.get("DATABASE_NAME", "leaderboard")
        sslmode = os.environ.get("DATABASE_SSLMODE", "require")
        return cls(url=f"postgresql://{host}:{port}/{name}?sslmode={sslmode}", secret_id=secret)

    def connection_url(self) -> str:
        """The URL with credentials (fetched from Secrets Manager when configured so)."""
        if self.secret_id is None:
            return self.url
        import json
        from urllib.parse import quote

        import boto3

        secret = json.loads(
            boto3.client("secretsmanager").get_secret_value(SecretId=self.secret_id)["SecretString"]
        )
        user, password = quote(secret["username"], safe=""), quote(secret["password"], safe="")
        return self.url.replace("postgresql://", f"postgresql://{user}:{password}@", 1)


@dataclass(frozen=True, slots=True)
class LiveSettings:
    """The live publisher: where to publish, how often at most, and how long one run lasts."""

    events_url: str
    namespace: str
    publish_rate: int
    run_seconds: int
    max_changed: int
    player_namespace: str = "players"
    max_watch_checks: int = 2000

    @classmethod
    def from_env(cls) -> LiveSettings:
        namespace = _namespace("LIVE_NAMESPACE", "leaderboards")
        player_namespace = _namespace("LIVE_PLAYER_NAMESPACE", "players")
        if player_namespace == namespace:
            raise ConfigurationError("LIVE_PLAYER_NAMESPACE must differ from LIVE_NAMESPACE")
        return cls(
            events_url=_url("LIVE_EVENTS_URL", ("https", "http")),
            namespace=namespace,
            publish_rate=_int("LIVE_PUBLISH_RATE", 4, 1, 20),
            run_seconds=_int("LIVE_RUN_SECONDS", 60, 1, 840),
            max_changed=_int("LIVE_MAX_CHANGED", 25, 0, 1000),
            player_namespace=player_namespace,
            max_watch_checks=_int("LIVE_MAX_WATCH_CHECKS", 2000, 1, 100_000),
        )


def _namespace(name: str, default: str) -> str:
    """An AppSync Events channel namespace: 1-50 letters, digits or dashes."""
    value = os.environ.get(name, default).strip()
    if not value.replace("-", "").isalnum() or not 1 <= len(value) <= 50:
        raise ConfigurationError(f"{name} must be 1-50 letters, digits or dashes")
    return value


_LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}


@dataclass(frozen=True, slots=True)
class TokenSettings:
    """How a function verifies a bearer token itself, on routes API Gateway does not authorize
    (the reads: an authorizer cannot be optional on an HTTP API route).

    One algorithm per deployment, so a token can never choose how it is checked: with
    JWT_SECRET (the local stack) HS256 with that secret only; without it (AWS) RS256 only,
    with the keys the issuer publishes at JWT_JWKS_URL (default
    `<JWT_ISSUER>/.well-known/jwks.json`, where Cognito publishes them). JWT_AUDIENCE is a
    comma-separated list, as the template's JwtAudience parameter."""

    issuer: str
    audiences: frozenset[str]
    secret: str | None = None
    jwks_url: str | None = None
    jwks_timeout_seconds: float = 2.0

    @property
    def algorithm(self) -> str:
        return "HS256" if self.secret else "RS256"

    @classmethod
    def from_env(cls) -> TokenSettings:
        issuer = os.environ.get("JWT_ISSUER", "").strip()
        if not issuer:
            raise ConfigurationError("JWT_ISSUER is required")
        audiences = frozenset(
            a.strip() for a in os.environ.get("JWT_AUDIENCE", "").split(",") if a.strip()
        )
        if not audiences:
            raise ConfigurationError("JWT_AUDIENCE is required (comma-separated audiences)")
        secret = os.environ.get("JWT_SECRET", "")
        if secret:
            return cls(issuer=issuer, audiences=audiences, secret=secret)
        url = os.environ.get("JWT_JWKS_URL", "").strip()
        url = url or f"{issuer.rstrip('/')}/.well-known/jwks.json"
        parts = urlsplit(url)
        # Plain http only on this machine (tests): anywhere else the keys could be swapped.
        local = parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS
        if not parts.hostname or not (parts.scheme == "https" or local):
            raise ConfigurationError(
                f"JWT_JWKS_URL must be an https URL (it defaults to JWT_ISSUER's), not {url!r}"
            )
        return cls(issuer=issuer, audiences=audiences, jwks_url=url)


_CALLABLE_RE = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*", re.ASCII)


@dataclass(frozen=True, slots=True)
class HookSettings:
    """The validation hooks boards may name (leaderboard/domain/hooks.py).

    VALIDATION_HOOK_ARNS: comma-separated Lambda function ARNs (the template grants
    lambda:InvokeFunction on exactly these). LOCAL_VALIDATION_HOOKS (the local stack and
    tests): `name=package.module:function,...`; a board names a hook by its name, so a board
    body never picks the code that runs."""

    lambda_arns: frozenset[str] = frozenset()
    local: tuple[tuple[str, str], ...] = ()

    @property
    def targets(self) -> frozenset[str]:
        return self.lambda_arns | {name for name, _ in self.local}

    @classmethod
    def from_env(cls) -> HookSettings:
        from leaderboard.domain.hooks import LAMBDA_ARN_RE, LOCAL_NAME_RE

        arns = [a.strip() for a in os.environ.get("VALIDATION_HOOK_ARNS", "").split(",")]
        for arn in filter(None, arns):
            if not LAMBDA_ARN_RE.fullmatch(arn):
                raise ConfigurationError(
                    f"VALIDATION_HOOK_ARNS must list Lambda function ARNs, not {arn!r}"
                )
        local: dict[str, str] = {}
        for item in filter(
            None, (i.strip() for i in os.environ.get("LOCAL_VALIDATION_HOOKS", "").split(","))
        ):
            name, _, path = (part.strip() for part in item.partition("="))
            if not LOCAL_NAME_RE.fullmatch(name) or not _CALLABLE_RE.fullmatch(path):
                raise ConfigurationError(
                    "LOCAL_VALIDATION_HOOKS must be name=package.module:function,... "
                    f"(names of lowercase letters, digits, - and _), not {item!r}"
                )
            if name in local:
                raise ConfigurationError(f"LOCAL_VALIDATION_HOOKS names {name!r} twice")
            local[name] = path
        return cls(lambda_arns=frozenset(filter(None, arns)), local=tuple(local.items()))


def _webhook_url(name: str) -> str:
    """https anywhere; plain http only to a loopback or private address (the local stack, a
    receiver beside it), never to the internet: the body is signed, not encrypted."""
    import ipaddress

    raw = _url(name, ("https", "http"))
    parts = urlsplit(raw)
    if not parts.hostname:
        raise ConfigurationError(f"{name} must name a host")
    if parts.scheme == "http" and parts.hostname not in _LOOPBACK_HOSTS:
        try:
            private = ipaddress.ip_address(parts.hostname).is_private
        except ValueError:
            private = False
        if not private:
            raise ConfigurationError(f"{name} must be an https URL, not {raw!r}")
    return raw


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """The webhook delivery function: where period.ended events go, how they are signed and
    retried. The shared secret is WEBHOOK_SECRET (the local stack) or, on AWS, the Secrets
    Manager secret WEBHOOK_SECRET_ARN, read on the first delivery, never at cold start."""

    url: str
    queue_url: str
    dead_letter_queue_url: str
    timeout_ms: int = 5000
    retry_base_seconds: int = 10
    secret: str | None = None
    secret_arn: str | None = None
    sqs_endpoint_url: str | None = None

    @classmethod
    def from_env(cls) -> WebhookSettings:
        secret = os.environ.get("WEBHOOK_SECRET", "")
        arn = os.environ.get("WEBHOOK_SECRET_ARN", "").strip()
        if not secret and not arn:
            raise ConfigurationError("WEBHOOK_SECRET_ARN (or WEBHOOK_SECRET locally) is required")
        if arn and not re.fullmatch(
            r"arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+", arn
        ):
            raise ConfigurationError(f"WEBHOOK_SECRET_ARN must be a secret's ARN, not {arn!r}")
        if secret and len(secret) < 16:
            raise ConfigurationError("WEBHOOK_SECRET must be at least 16 characters")
        return cls(
            url=_webhook_url("WEBHOOK_URL"),
            queue_url=_url("WEBHOOK_QUEUE_URL", ("https", "http")),
            dead_letter_queue_url=_url("WEBHOOK_DLQ_URL", ("https", "http")),
            timeout_ms=_int("WEBHOOK_TIMEOUT_MS", 5000, 100, 10_000),
            retry_base_seconds=_int("WEBHOOK_RETRY_BASE_SECONDS", 10, 0, 900),
            secret=secret or None,
            secret_arn=None if secret else arn,
            sqs_endpoint_url=os.environ.get("SQS_ENDPOINT_URL") or None,
        )

    def load_secret(self) -> bytes:
        """The shared secret's bytes (a Secrets Manager SecretString is used as it is)."""
        if self.secret is not None:
            return self.secret.encode()
        import boto3

        assert self.secret_arn is not None
        value = boto3.client("secretsmanager").get_secret_value(SecretId=self.secret_arn)
        return str(value["SecretString"]).encode()
