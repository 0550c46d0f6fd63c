"""A score submission, validated before it reaches the store."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from leaderboard.domain.auth import Caller, submission_player
from leaderboard.domain.errors import BadRequest, DomainError
from leaderboard.domain.tiebreakers import parse_values
from leaderboard.domain.validation import (
    IDEMPOTENCY_KEY_RE,
    known_fields,
    require_player_id,
    require_region,
    require_score,
    require_team_id,
)

MAX_METADATA_KEYS = 16
MAX_METADATA_STRING = 256
MAX_METADATA_KEY = 64
_FIELDS = {"player_id", "score", "region", "metadata", "tiebreakers", "team_id"}


@dataclass(frozen=True, slots=True)
class Submission:
    player_id: str
    score: int | float
    region: str | None
    metadata: dict[str, str | int | float | bool] | None
    tiebreakers: dict[str, int] | None = None
    # the team the submission's contribution goes to (team boards only)
    team_id: str | None = None

    def fingerprint(self) -> str:
        """Identifies the request body for idempotency: same key + other body is a conflict."""
        body: list[Any] = [self.player_id, self.score, self.region, self.metadata]
        if self.tiebreakers is not None:  # left out otherwise: older records' keys still match
            body.append(self.tiebreakers)
        if self.team_id is not None:
            body.append({"team_id": self.team_id})
        canonical = json.dumps(
            body,
            sort_keys=True,
            separators=(",", ":"),
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def _metadata(value: Any) -> dict[str, str | int | float | bool] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadRequest("metadata must be a flat JSON object", field="metadata")
    if len(value) > MAX_METADATA_KEYS:
        raise BadRequest(f"metadata has at most {MAX_METADATA_KEYS} keys", field="metadata")
    clean: dict[str, str | int | float | bool] = {}
    for key, item in value.items():
        if not 1 <= len(key) <= MAX_METADATA_KEY:
            raise BadRequest(
                f"metadata keys are 1 to {MAX_METADATA_KEY} characters", field="metadata"
            )
        if isinstance(item, bool):
            clean[key] = item
        elif isinstance(item, str):
            if len(item) > MAX_METADATA_STRING:
                raise BadRequest(
                    f"metadata strings are at most {MAX_METADATA_STRING} characters",
                    field="metadata",
                )
            clean[key] = item
        elif isinstance(item, (int, float)):
            clean[key] = require_score(item, f"metadata.{key}")
        else:
            raise BadRequest(
                "metadata values must be strings, numbers or booleans", field="metadata"
            )
    return clean


def parse_submission(body: dict[str, Any], caller: Caller) -> Submission:
    known_fields(body, _FIELDS)
    if "score" not in body:
        raise BadRequest("score is required", field="score")
    requested = body.get("player_id")
    if requested is not None:
        requested = require_player_id(requested)
    player_id = require_player_id(submission_player(caller, requested))
    region = body.get("region")
    team = body.get("team_id")
    return Submission(
        player_id=player_id,
        score=require_score(body["score"], "score"),
        region=None if region is None else require_region(region),
        metadata=_metadata(body.get("metadata")),
        tiebreakers=parse_values(body.get("tiebreakers")),
        team_id=None if team is None else require_team_id(team),
    )


MAX_BATCH_ITEMS = 500
_BATCH_FIELDS = {"submissions"}


@dataclass(frozen=True, slots=True)
class BatchItem:
    """One item of a batch: a valid submission (with its idempotency key) or why it is not.
    A bad item fails alone, so its error is kept here rather than raised."""

    submission: Submission | None
    idempotency_key: str | None = None
    error: DomainError | None = None


def parse_batch(body: dict[str, Any], caller: Caller) -> list[BatchItem]:
    """`{"submissions": [...]}` with 1 to 500 items; the envelope's errors fail the request,
    an item's errors only that item."""
    known_fields(body, _BATCH_FIELDS)
    items = body.get("submissions")
    if not isinstance(items, list) or not 1 <= len(items) <= MAX_BATCH_ITEMS:
        raise BadRequest(
            f"submissions must be a list of 1 to {MAX_BATCH_ITEMS} submissions",
            field="submissions",
        )
    return [_batch_item(item, caller) for item in items]


def _batch_item(item: Any, caller: Caller) -> BatchItem:
    try:
        if not isinstance(item, dict):
            raise BadRequest("each submission must be a JSON object", field="submissions")
        fields = dict(item)
        key = fields.pop("idempotency_key", None)
        if key is not None and (not isinstance(key, str) or not IDEMPOTENCY_KEY_RE.fullmatch(key)):
            raise BadRequest(
                "idempotency_key must be 1-128 printable ASCII characters",
                field="idempotency_key",
            )
        return BatchItem(parse_submission(fields, caller), key)
    except DomainError as error:
        return BatchItem(None, error=error)
