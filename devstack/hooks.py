"""Example validation hooks for the local stack (docs/configuration.md, "Validation hooks").

`make run` names them in LOCAL_VALIDATION_HOOKS, so a board can use one:

    curl -X PUT "$API/boards/arena" -H "Authorization: Bearer $ADMIN_TOKEN" \\
      -d '{"validation_hook": {"target": "no_negative", "timeout_ms": 200}}'

A hook gets `{"board_id", "submissions": [{"player_id", "score", "region", "metadata",
"idempotency_key"}...]}` and answers `{"verdicts": [{"verdict", "reason"}...]}`, one per
submission in order. On AWS the same contract is a Lambda function's event and result.
`slow` and `broken` exist to try (and test) the time budget and the failure policy.
"""

from __future__ import annotations

import time
from typing import Any

SUSPICIOUS_SCORE = 1_000_000


def no_negative(request: dict[str, Any]) -> dict[str, Any]:
    """Reject negative scores; flag implausibly high ones for review; accept the rest."""
    verdicts = []
    for item in request["submissions"]:
        score = item["score"]
        if score < 0:
            verdicts.append({"verdict": "reject", "reason": "negative scores are not allowed"})
        elif score >= SUSPICIOUS_SCORE:
            verdicts.append({"verdict": "flag", "reason": f"score {score} is unusually high"})
        else:
            verdicts.append({"verdict": "accept"})
    return {"verdicts": verdicts}


def slow(request: dict[str, Any]) -> dict[str, Any]:
    """Accepts everything, after 2 s: more than any budget short of that."""
    time.sleep(2)
    return {"verdicts": [{"verdict": "accept"} for _ in request["submissions"]]}


def broken(request: dict[str, Any]) -> dict[str, Any]:
    """Always fails, as a hook with a bug does."""
    raise RuntimeError("this hook is broken on purpose")


def wrong_answer(request: dict[str, Any]) -> dict[str, Any]:
    """Answers one verdict too few: a malformed answer is a failure, never a guess."""
    return {"verdicts": [{"verdict": "accept"} for _ in request["submissions"][1:]]}


# What `make run` configures: LOCAL_VALIDATION_HOOKS unless the environment sets its own.
LOCAL_HOOKS = ",".join(
    f"{name}=devstack.hooks:{name}" for name in ("no_negative", "slow", "broken", "wrong_answer")
)
