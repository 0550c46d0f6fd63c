"""Validation hooks: a board's own check of each submission before it is applied.

A board may name a hook (on AWS a Lambda function ARN from the deployment's allowed list,
locally a name the configuration maps to a Python callable). The write path calls it once per
request with every submission it is about to apply and gets one verdict per submission:
`accept`, `reject` (422 with the hook's reason, nothing written) or `flag` (applied, and the
record keeps the verdict for review). A hook that fails, answers anything else, or misses its
time budget follows the board's `on_failure` policy: `open` applies the submission and records
`failed_open`, `closed` answers 503 and writes nothing.

This module is the contract only (no AWS, no I/O): the board field, the request the hook
receives, the strict reading of its answer, and what the write path does with each verdict.
The callers are in leaderboard.stores.aws.validation_hooks.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from leaderboard.domain.errors import BadRequest, Unprocessable
from leaderboard.domain.submissions import Submission
from leaderboard.domain.validation import known_fields

FIELD = "validation_hook"
MIN_TIMEOUT_MS = 10
MAX_TIMEOUT_MS = 5_000
DEFAULT_TIMEOUT_MS = 500
ON_FAILURE = ("closed", "open")
VERDICTS = ("accept", "reject", "flag")
# What the record keeps: the hook's verdict on an applied submission, or that it failed open.
RECORDED_VERDICTS = ("accept", "flag", "failed_open")
MAX_REASON = 256
# The caller's error codes the submit script answers after its idempotency check.
REJECTED = "rejected_by_hook"
UNAVAILABLE = "hook_unavailable"

LAMBDA_ARN_RE = re.compile(
    r"arn:aws[a-z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9_$-]{1,128})?"
)
LOCAL_NAME_RE = re.compile(r"[a-z][a-z0-9_-]{0,63}")


class HookFailure(Exception):
    """The hook did not give a usable answer: an error, a timeout, or a malformed reply."""


@dataclass(frozen=True, slots=True)
class HookConfig:
    """A board's hook: where it is, how long it may take, what a failure means."""

    target: str
    timeout_ms: int = DEFAULT_TIMEOUT_MS
    on_failure: str = "closed"

    @property
    def is_lambda(self) -> bool:
        return self.target.startswith("arn:")

    def to_json(self) -> dict[str, Any]:
        return {"target": self.target, "timeout_ms": self.timeout_ms, "on_failure": self.on_failure}

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> HookConfig | None:
        """From a stored board or the compact script config (validated when it was written)."""
        if not data:
            return None
        return cls(
            target=str(data["target"]),
            timeout_ms=int(data.get("timeout_ms", DEFAULT_TIMEOUT_MS)),
            on_failure=str(data.get("on_failure", "closed")),
        )


def parse_hook_field(value: Any, allowed_targets: Collection[str]) -> HookConfig | None:
    """The board's `validation_hook`: null, or an object naming an allowed target.

    Only targets the deployment allows can be named (the Lambda ARNs of VALIDATION_HOOK_ARNS,
    or the names of LOCAL_VALIDATION_HOOKS): a board body never chooses code to run. The
    object's shape is checked first (400); a well-formed target not allowed here is 422.
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadRequest(f"{FIELD} must be null or an object", field=FIELD)
    known_fields(value, {"target", "timeout_ms", "on_failure"}, FIELD)
    target = value.get("target")
    if not isinstance(target, str) or not (
        LAMBDA_ARN_RE.fullmatch(target) or LOCAL_NAME_RE.fullmatch(target)
    ):
        raise BadRequest(
            f"{FIELD}.target must be a Lambda function ARN or a configured hook name",
            field=f"{FIELD}.target",
        )
    timeout = value.get("timeout_ms", DEFAULT_TIMEOUT_MS)
    if isinstance(timeout, float) and timeout.is_integer():  # 500.0 is 500, as in JSON Schema
        timeout = int(timeout)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int)
        or not MIN_TIMEOUT_MS <= timeout <= MAX_TIMEOUT_MS
    ):
        raise BadRequest(
            f"{FIELD}.timeout_ms must be an integer from {MIN_TIMEOUT_MS} to {MAX_TIMEOUT_MS}",
            field=f"{FIELD}.timeout_ms",
        )
    on_failure = value.get("on_failure", "closed")
    if on_failure not in ON_FAILURE:
        raise BadRequest(f"{FIELD}.on_failure must be closed or open", field=f"{FIELD}.on_failure")
    if target not in allowed_targets:  # well-formed, but not one this deployment allows
        raise Unprocessable(
            f"{FIELD}.target {target!r} is not one of this deployment's validation hooks "
            "(VALIDATION_HOOK_ARNS, or LOCAL_VALIDATION_HOOKS locally)",
            field=f"{FIELD}.target",
        )
    return HookConfig(target=target, timeout_ms=timeout, on_failure=on_failure)


def hook_request(board_id: str, items: Sequence[tuple[Submission, str | None]]) -> dict[str, Any]:
    """What the hook receives: every submission of the request, in order (with its
    tie-breaker values on a board that has them: a run's time matters to anti-cheat)."""
    submissions: list[dict[str, Any]] = []
    for submission, key in items:
        item: dict[str, Any] = {
            "player_id": submission.player_id,
            "score": submission.score,
            "region": submission.region,
            "metadata": submission.metadata,
            "idempotency_key": key,
        }
        if submission.tiebreakers is not None:
            item["tiebreakers"] = submission.tiebreakers
        submissions.append(item)
    return {"board_id": board_id, "submissions": submissions}


@dataclass(frozen=True, slots=True)
class Verdict:
    verdict: str
    reason: str | None = None


def parse_hook_answer(answer: Any, expected: int) -> list[Verdict]:
    """The hook's answer, held strictly to `{"verdicts": [{"verdict", "reason"}...]}` with one
    verdict per submission: anything else is a failure, never a guess at what it meant."""
    if not isinstance(answer, dict) or set(answer) != {"verdicts"}:
        raise HookFailure('the hook must answer an object {"verdicts": [...]}')
    items = answer["verdicts"]
    if not isinstance(items, list) or len(items) != expected:
        raise HookFailure(f"the hook must answer {expected} verdict(s), in order")
    verdicts: list[Verdict] = []
    for item in items:
        if not isinstance(item, dict) or not set(item) <= {"verdict", "reason"}:
            raise HookFailure('each verdict must be an object {"verdict", "reason"}')
        verdict, reason = item.get("verdict"), item.get("reason")
        if verdict not in VERDICTS or not isinstance(verdict, str):
            raise HookFailure("a verdict must be accept, reject or flag")
        if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON):
            raise HookFailure(f"a reason must be a string of at most {MAX_REASON} characters")
        verdicts.append(Verdict(verdict, reason or None))
    return verdicts


@dataclass(frozen=True, slots=True)
class Screening:
    """What the write path does with one submission after its hook: `error` is the code the
    submit script answers instead of applying it ('' = apply it); `verdict` is what the
    record keeps of an applied one."""

    error: str = ""
    verdict: str = ""
    reason: str | None = None

    def record_field(self) -> str:
        """The verdict as the outbox keeps it: "verdict" or "verdict<TAB>reason"."""
        return self.verdict + (f"\t{self.reason}" if self.reason else "")


def screenings(
    hook: HookConfig, verdicts: Sequence[Verdict] | HookFailure, count: int
) -> list[Screening]:
    """Each submission's fate, from the hook's verdicts or from its failure and the policy."""
    if isinstance(verdicts, HookFailure):
        if hook.on_failure == "open":
            return [Screening(verdict="failed_open", reason=_clip(str(verdicts)))] * count
        return [Screening(error=UNAVAILABLE, reason=_clip(str(verdicts)))] * count
    out: list[Screening] = []
    for verdict in verdicts:
        if verdict.verdict == "reject":
            out.append(Screening(error=REJECTED, reason=verdict.reason))
        else:
            out.append(Screening(verdict=verdict.verdict, reason=verdict.reason))
    return out


def parse_record_field(text: str | None) -> tuple[str | None, str | None]:
    """(verdict, reason) from the outbox's field; (None, None) for a board without a hook."""
    if not text:
        return None, None
    verdict, _, reason = text.partition("\t")
    return (verdict if verdict in RECORDED_VERDICTS else None), (reason or None)


def _clip(text: str) -> str:
    return text[:MAX_REASON]
