"""How a live message is cut to the event size limit (docs/API.md, "Message size"): metadata
first (the changed entries', then the top's), then the changed entries, then top entries from
the last up; never dropped, and marked `truncated`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from leaderboard.domain.live import fit_message


def _entry(rank: int, meta: int) -> dict[str, Any]:
    return {
        "rank": rank,
        "player_id": f"p{rank}",
        "score": 100 - rank,
        "metadata": {"m": "x" * meta},
    }


def _message() -> dict[str, Any]:
    return {
        "type": "leaderboard.changed",
        "version": 7,
        "top": [_entry(r, 300) for r in range(1, 11)],
        "changed": [_entry(r, 300) for r in (3, 5, 8)],
        "changed_truncated": False,
        "truncated": False,
    }


def _size(message: dict[str, Any]) -> int:
    return len(json.dumps(message).encode())


def _cut(limit: int) -> tuple[dict[str, Any], bool]:
    text, truncated = fit_message(_message(), json.dumps, limit)
    assert len(text.encode()) <= limit
    return json.loads(text), truncated


def _without_meta(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [dict(e, metadata=None) for e in entries]


def test_a_message_within_the_limit_is_sent_whole() -> None:
    message, truncated = _cut(_size(_message()))
    assert (message, truncated) == (_message(), False)


def test_the_changed_entries_metadata_goes_first() -> None:
    full = _message()
    message, truncated = _cut(_size(full) - 1)
    assert truncated and message["truncated"]
    assert message["top"] == full["top"]
    assert message["changed"] == _without_meta(full["changed"])


def test_then_the_top_entries_metadata() -> None:
    full = _message()
    no_changed_meta = dict(full, changed=_without_meta(full["changed"]), truncated=True)
    message, _ = _cut(_size(no_changed_meta) - 1)
    assert message["top"] == _without_meta(full["top"])
    assert message["changed"] == _without_meta(full["changed"])
    assert not message["changed_truncated"]


def test_then_the_changed_entries_then_top_entries_from_the_last() -> None:
    full = _message()
    bare = dict(
        full, top=_without_meta(full["top"]), changed=[], changed_truncated=True, truncated=True
    )
    message, _ = _cut(_size(bare) + 5)
    assert message["changed"] == [] and message["changed_truncated"]
    assert message["top"] == _without_meta(full["top"])
    message, _ = _cut(_size(bare) - 1)
    assert message["top"] == _without_meta(full["top"])[:9]  # the last entry went


@pytest.mark.parametrize("limit", [150, 400, 1000, 3000])
def test_whatever_the_limit_the_message_is_sent_marked_and_keeps_its_version(limit: int) -> None:
    message, truncated = _cut(limit)
    assert truncated and message["truncated"] and message["version"] == 7
    assert message["top"] == _without_meta(_message()["top"])[: len(message["top"])]
