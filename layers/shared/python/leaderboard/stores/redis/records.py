"""What the index's scripts answer, parsed: a submission's record (also kept in the outbox and
the idempotency records), a batch's items, a watch's start, the tie keys after a read's rows."""

from __future__ import annotations

from dataclasses import dataclass, replace

from leaderboard.domain.events import Eviction, Standing
from leaderboard.domain.hooks import Screening, parse_record_field
from leaderboard.domain.periods import Calendar
from leaderboard.domain.submissions import Submission
from leaderboard.domain.tiebreakers import decode_with_spec, parse_spec, score_of_key
from leaderboard.domain.validation import format_score
from leaderboard.stores.redis.rules import WriteRules


@dataclass(frozen=True, slots=True)
class BatchWrite:
    """One submission of a batch, with the event id and idempotency scope it is applied with."""

    submission: Submission
    event_id: str
    idempotency: tuple[str, str] | None


class CustomPeriodsKept(Exception):
    """A read of every current period reached a board of custom periods without its current
    one: here is the board's calendar, to place it and ask again (rare: callers cache it)."""

    def __init__(self, calendar: Calendar | None) -> None:
        super().__init__("the board keeps custom periods")
        self.calendar = calendar


@dataclass(frozen=True, slots=True)
class WatchStanding:
    """A watched player's standing when the watch started, and the watch's friends."""

    score: int | float | None
    rank: int | None
    friends: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class LeaguePlace:
    """A league board's submission: the season, the player's group in it (as the scripts name
    it, "tier.number") and whether this write placed the player. The group's standings are a
    read's (a write keeps none: league.lua)."""

    season: str
    group: str
    placed: bool


@dataclass(frozen=True, slots=True)
class SubmitResult:
    event_id: str
    applied: bool
    version: int
    occurred_at_ms: int
    operation: str
    standings: tuple[Standing, ...]
    evictions: tuple[Eviction, ...]
    replayed: bool
    # League boards: the player's group in the season, their rank in it (None: hidden), whether
    # this write placed them, and how many visible players the group has.
    league: LeaguePlace | None = None
    arrival: int | None = None  # sharded ties=first boards: what orders the player's ties
    # False when replicas were asked to confirm the write (RedisIndex.replica_acks) and too few
    # did in time: a failover now could lose it, so it must not be acknowledged or queued.
    replicated: bool = True
    # The board's validation hook on it (accept, flag, failed_open); None: the board has none.
    hook_verdict: str | None = None
    hook_reason: str | None = None

    def screened(self, screening: Screening | None) -> SubmitResult:
        """With the verdict the record keeps (a replay carries this request's verdict)."""
        if screening is None or not screening.verdict:
            return self
        return replace(self, hook_verdict=screening.verdict, hook_reason=screening.reason)


def split_suffix(suffix: str) -> tuple[str, str | None]:
    period, _, region = suffix.partition(":")
    return period, region or None


def record_score(text: str) -> float:
    """A score in a submission's record: a number, or on tie-breaker boards '#' and the score's
    key (the script then formats no number: docs/architecture.md, "The submit script")."""
    return score_of_key(text[1:]) if text[0] == "#" else float(text)


def parse_record(record: str, replayed: bool, rules: WriteRules | None = None) -> SubmitResult:
    """A submission's record. Lines carry the set's suffix (period[:region]) and the entry
    before; records written before issue 22 (still in outboxes and idempotency records) carry
    period and region, and no entry before. `rules`: the board's, whose tie-breakers decode the
    tie keys kept (None or a board without: none decoded)."""
    decode = rules.decode if rules is not None and rules.tiebreakers else None
    head, *lines = record.split("\n")
    event_id, applied, version, now_ms, operation, *arrival = head.split("\t")
    standings: list[Standing] = []
    evictions: list[Eviction] = []
    league: LeaguePlace | None = None
    for line in lines:
        fields = line.split("\t")
        if fields[0] == "~":  # a league board's group
            # before the groups kept no standings: "~ season group rank placed players"
            league = LeaguePlace(fields[1], fields[2], fields[-2 if len(fields) > 4 else 3] == "1")
            continue
        at = 1 if fields[0] == "-" else 0
        if len(fields) == 5:  # a pre-issue-22 line: period and region in two fields
            fields[at : at + 2] = [
                f"{fields[at]}:{fields[at + 1]}" if fields[at + 1] else fields[at]
            ]
        period, region = split_suffix(fields[at])
        if at:
            evictions.append(Eviction(period, region, fields[2], fields[3] == "1"))
            continue
        # changed: '1', or '2' for a hidden player's entry (the live publisher skips those)
        _, score, rank, changed, *previous = fields
        before, before_rank = previous[:2] if previous else ("", "")  # older records: unknown
        tie_key = previous[2] if len(previous) > 2 and previous[2] else None
        contribution = previous[3] if len(previous) > 3 and previous[3] else None
        standings.append(
            Standing(
                period=period,
                region=region,
                score=format_score(record_score(score)),
                rank=int(rank) if rank and rank != "-" else None,
                changed=changed != "0",
                unranked=rank == "-",
                previous_score=format_score(record_score(before)) if before else None,
                previous_rank=int(before_rank) if before_rank and before_rank != "-" else None,
                tie_key=tie_key,
                tiebreakers=decode(tie_key) if decode is not None else None,
                team_contribution=format_score(float(contribution)) if contribution else None,
            )
        )
    return SubmitResult(
        arrival=int(arrival[0]) if arrival else None,
        event_id=event_id,
        applied=applied == "1",
        version=int(version),
        occurred_at_ms=int(now_ms),
        operation=operation,
        standings=tuple(standings),
        evictions=tuple(evictions),
        replayed=replayed,
        league=league,
    )


def with_verdict(result: SubmitResult, fields: dict[str, str]) -> SubmitResult:
    """An outbox entry's result, with the hook's verdict the entry keeps beside the record."""
    verdict, reason = parse_record_field(fields.get("h"))
    if verdict is None:
        return result
    return replace(result, hook_verdict=verdict, hook_reason=reason)


def read_tiebreakers(tail: list[str], count: int) -> list[dict[str, int] | None]:
    """What a read script returns after its entries on a tie-breaker board: a tie key per
    entry ('' = none), then the board's columns; nothing on other boards."""
    if not tail:
        return [None] * count
    spec = parse_spec(tail[-1])
    return [decode_with_spec(key, spec) if key else None for key in tail[:-1]]
