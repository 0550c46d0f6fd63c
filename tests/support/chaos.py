"""What every chaos run must show, field by field, so a failure names what broke."""

from __future__ import annotations

from typing import Any


def assert_nothing_lost_or_wrong(check: dict[str, Any]) -> None:
    """The independent checker's verdict: nothing lost or applied twice, no 5xx but 503, and
    Redis, PostgreSQL and the model equal."""
    assert check["lost"] == 0, check["examples"]
    assert check["duplicated"] == 0, check["examples"]
    assert check["bad_statuses"] == {}, check["examples"]
    assert check["unknown_events"] == 0, check["examples"]
    assert check["response_mismatches"] == 0, check["examples"]
    assert not check["redis_vs_postgres"], check["redis_vs_postgres"]
    assert not check["redis_vs_model"], check["redis_vs_model"]
    assert not check["postgres_vs_model"], check["postgres_vs_model"]
    assert not check["metadata_mismatches"], check["metadata_mismatches"]
    assert check["ok"], check
