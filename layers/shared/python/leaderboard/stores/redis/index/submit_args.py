"""The submit script's keys and arguments (ARGV 1-27 of submit.lua): which sets a submission
goes to, the rules it is checked with, and what the board's hook said of it."""

from __future__ import annotations

import json
from typing import Any

from leaderboard.domain.hooks import Screening
from leaderboard.domain.periods import CUSTOM, Period
from leaderboard.domain.shards import arrival_number, shard_board_id, shard_of, stamp_prefix
from leaderboard.domain.submissions import Submission
from leaderboard.domain.tiebreakers import score_key
from leaderboard.stores.redis.keys import BoardKeys
from leaderboard.stores.redis.rules import WriteRules


def submit_call(
    board_id: str,
    submission: Submission,
    rules: WriteRules | None,
    *,
    event_id: str,
    now_ms: int,
    periods: dict[str, Period],
    idempotency: tuple[str, str] | None,
    idempotency_ttl: int,
    arrival: tuple[int, int] = (0, 0),
    screening: Screening | None = None,
) -> tuple[list[str], list[Any]]:
    """The submit script's keys and arguments (rules None: unknown yet, answered STALE).
    On a sharded board they name the player's shard; `arrival` (microseconds, place in
    its batch) orders equal scores there on ties=first boards. `screening`: what the
    board's validation hook said (a refusal is answered as the caller's error code, after
    the idempotency check; a verdict goes to the outbox with the event)."""
    sharded = rules is not None and rules.shards > 1
    if sharded:
        assert rules is not None
        board_id = shard_board_id(
            board_id, shard_of(submission.player_id, rules.shards), rules.shards
        )
    keys = BoardKeys(board_id)
    script_keys = [
        keys.cfg,
        keys.range,
        keys.idempotency(*idempotency) if idempotency else keys.prefix + "idem:-",
        keys.seq,
        keys.meta,
        keys.refs,
        keys.registry,
        keys.rate(submission.player_id),
        keys.outbox,
    ]
    if rules is not None:
        regions: list[str | None] = [None]
        if submission.region and submission.region in rules.regions:
            regions.append(submission.region)
        periods = rules.periods_at(periods, now_ms)
        for region in regions:
            for kind, period in periods.items():
                if kind in rules.periods:
                    script_keys.append(keys.zset(period.id, region))
                    if rules.keyed:
                        script_keys.append(keys.members(period.id, region))
    score = submission.score
    refused = rules.precheck(submission) if rules is not None else ""
    if not refused and screening is not None:
        refused = screening.error
    args: list[Any] = [
        rules.text if rules is not None else "",
        submission.player_id,
        repr(score) if isinstance(score, float) else str(score),
        now_ms,
        event_id,
        submission.region or "",
        json.dumps(submission.metadata, separators=(",", ":"))
        if submission.metadata is not None
        else "",
        submission.fingerprint() if idempotency else "",
        idempotency_ttl,
        refused,
        *(rules.args if rules is not None else ("set", "", "", "", "", "", "")),
        len(keys.prefix) + 3,  # where a set key's suffix starts (after "z:"), 1-based
    ]
    if sharded and rules is not None:
        args.append("1")
        if rules.first:
            number = arrival_number(*arrival)
            args += [stamp_prefix(number, rules.desc), number]
    if rules is not None and rules.tiebreakers:
        args += [""] * (21 - len(args))  # ARGV 19-21 are optional
        args.append(rules.tie_key(submission))
    if screening is not None and screening.verdict:
        # ARGV 23, the verdict for the outbox: 19-22 are '' when they do not apply.
        args += [""] * (22 - len(args)) + [screening.record_field()]
    if rules is not None and rules.teams is not None:
        # ARGV 24-25: the team the contribution goes to, and how the board adds them up
        args += [""] * (23 - len(args)) + [submission.team_id or "", rules.teams]
    if rules is not None and rules.tiebreakers:
        # ARGV 26: the submitted score's key, so the script need not build it
        args += [""] * (25 - len(args)) + [score_key(float(score))]
    if rules is not None and rules.tournament:
        # ARGV 27: the tournament's window, sign-up and caps, checked with the write (a
        # recurring tournament's: the window `periods_at` placed the submission in)
        args += [""] * (26 - len(args)) + [rules.tournament_at(now_ms)[0]]
    if rules is not None and rules.league:
        # ARGV 28: the season the player is placed in a group of, and the league's rules
        args += [""] * (27 - len(args)) + [rules.league_seasons(periods[CUSTOM])]
    return script_keys, args
