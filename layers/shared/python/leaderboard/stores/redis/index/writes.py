"""Score writes: one submission or a batch, each applied by submit.lua in one round trip
(with a WAIT in the same round trip when replicas must confirm it)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from redis.exceptions import NoScriptError

from leaderboard.domain.errors import BoardMissing, DomainError, Unavailable
from leaderboard.domain.hooks import HookConfig, Screening
from leaderboard.domain.periods import Period
from leaderboard.domain.submissions import Submission
from leaderboard.stores.redis.client import connected_replicas, queue_script, queue_wait
from leaderboard.stores.redis.errors import guarded, submit_error
from leaderboard.stores.redis.index.base import IndexBase
from leaderboard.stores.redis.index.submit_args import submit_call
from leaderboard.stores.redis.records import BatchWrite, SubmitResult, parse_record
from leaderboard.stores.redis.rules import WriteRules
from leaderboard.stores.redis.scripts import Script

# The board's validation hook on the submissions at these positions of a request, one
# screening each (leaderboard.services.scores makes it; called only for boards with a hook).
Screen = Callable[[HookConfig, Sequence[int]], Sequence[Screening]]


class WriteCommands(IndexBase):
    _submit = Script(__package__, "submit")

    @guarded
    def submit(
        self,
        board_id: str,
        submission: Submission,
        *,
        event_id: str,
        now_ms: int,
        periods: dict[str, Period],
        idempotency: tuple[str, str] | None,
        screen: Screen | None = None,
    ) -> SubmitResult:
        """Apply a submission to every period (and region) the board keeps, in one script call
        once this process has the board's rules (a new or changed board costs one more).
        A board with a validation hook: `screen` judges it first, with the rules the script
        then proves current (changed rules with another hook: judged again)."""
        arrival = self._arrival()
        screening: Screening | None = None
        judged_by: HookConfig | None = None
        for _ in range(3):
            rules = self._rules.get(board_id)
            hook = rules.hook if rules is not None else None
            if hook is None or screen is None or rules is None or rules.precheck(submission):
                screening, judged_by = None, None  # no hook, or refused whatever it says
            elif hook != judged_by:
                screening, judged_by = screen(hook, [0])[0], hook
            keys, args = self.submit_call(
                board_id,
                submission,
                self._rules.get(board_id),
                event_id=event_id,
                now_ms=now_ms,
                periods=periods,
                idempotency=idempotency,
                arrival=(arrival, 0),
                screening=screening,
            )
            replicated = True
            if self.replica_acks:
                reply, replicated = self._submit_and_wait(keys, args)
            else:
                reply = self._submit(keys=keys, args=args)
            status = reply[0]
            if status in ("OK", "REPLAY"):
                result = parse_record(
                    reply[1], status == "REPLAY", self._rules_of(board_id)
                ).screened(screening)
                return result if replicated else replace(result, replicated=False)
            if status != "STALE":
                raise submit_error(board_id, submission, reply[1:], screening)
            self._remember_rules(board_id, WriteRules.parse(reply[1]))
        raise Unavailable("the board's rules kept changing; retry", retry_after=1, store="redis")

    def _submit_and_wait(self, keys: list[str], args: list[Any]) -> tuple[Any, bool]:
        """The submit script and a WAIT on its node, in one round trip: (reply, replicated)."""
        for _ in range(2):
            pipe = self.client.pipeline(transaction=False)
            queue_script(pipe, self.client, self._submit.sha, keys, args)
            queue_wait(pipe, self.client, keys[0], self.replica_acks, self.replica_ack_timeout_ms)
            reply, acked = pipe.execute(raise_on_error=False)
            if isinstance(reply, NoScriptError):  # a restarted Redis: nothing was applied
                self.client.script_load(self._submit.script)
                continue
            for answer in (reply, acked):
                if isinstance(answer, Exception):
                    raise answer
            return reply, self._confirmed(keys[0], int(acked))
        raise Unavailable("the submit script could not be loaded; retry", retry_after=1)

    def _confirmed(self, key: str, acked: int) -> bool:
        """Whether enough replicas of the node holding `key` have the writes: `replica_acks`,
        or every replica it has if it has fewer. A node left with no replica (its replica took
        over from it, or died) has none that a failover could promote without the write, so
        it keeps taking writes; losing it loses the whole shard, which the rebuild from
        PostgreSQL restores. A replica cut off by a partition still counts until the
        replication link times out (60 s), and by then the cluster has stopped the node's
        writes (after its node timeout, 15 s), so no write slips through that way. Costs a
        round trip (ROLE) only when the replicas fell short."""
        if acked >= self.replica_acks:
            return True
        return acked >= min(self.replica_acks, connected_replicas(self.client, key))

    @guarded
    def submit_many(
        self,
        board_id: str,
        writes: Sequence[BatchWrite],
        *,
        now_ms: int,
        periods: dict[str, Period],
        screen: Screen | None = None,
    ) -> list[SubmitResult | DomainError]:
        """Apply many submissions to one board in one pipelined round trip (one more when this
        process does not have the board's current rules). They apply in order, each in its own
        script call: one refused submission does not stop the others. A board with a
        validation hook: `screen` judges every submission it may apply in one call first."""
        results: list[SubmitResult | DomainError | None] = [None] * len(writes)
        pending = list(range(len(writes)))
        arrival = self._arrival()
        screened: dict[int, tuple[HookConfig, Screening]] = {}
        for _ in range(3):
            rules = self._rules.get(board_id)
            hook = rules.hook if rules is not None else None
            if hook is not None and screen is not None and rules is not None:
                todo = [
                    i
                    for i in pending
                    if (i not in screened or screened[i][0] != hook)
                    and not rules.precheck(writes[i].submission)
                ]
                if todo:
                    judged = screen(hook, todo)
                    if len(judged) != len(todo):
                        raise RuntimeError("a screening per submission was expected")
                    screened.update(zip(todo, ((hook, s) for s in judged), strict=True))

            def screening_of(i: int, hook: HookConfig | None = hook) -> Screening | None:
                got = screened.get(i)
                return got[1] if got is not None and got[0] == hook else None

            pipe = self.client.pipeline(transaction=False)
            nodes: dict[int, str] = {}  # item -> the node its script ran on
            waits: dict[str, str] = {}  # node -> a key of it, for its WAIT
            for i in pending:
                write = writes[i]
                keys, args = self.submit_call(
                    board_id,
                    write.submission,
                    rules,
                    event_id=write.event_id,
                    now_ms=now_ms,
                    periods=periods,
                    idempotency=write.idempotency,
                    arrival=(arrival, i),
                    screening=screening_of(i),
                )
                # EVALSHA itself: a pipeline given the Script would first ask SCRIPT EXISTS,
                # one more round trip on every batch.
                nodes[i] = queue_script(pipe, self.client, self._submit.sha, keys, args)
                if self.replica_acks:
                    waits.setdefault(nodes[i], keys[0])
            for key in waits.values():  # one WAIT per node, after all of its scripts
                queue_wait(pipe, self.client, key, self.replica_acks, self.replica_ack_timeout_ms)
            everything = pipe.execute(raise_on_error=False)
            replies = everything[: len(pending)]
            confirmed: dict[str, bool] = {}
            for node, acked in zip(waits, everything[len(pending) :], strict=True):
                if isinstance(acked, Exception):
                    raise acked
                confirmed[node] = self._confirmed(waits[node], int(acked))
            stale: list[int] = []
            if any(isinstance(reply, NoScriptError) for reply in replies):
                self.client.script_load(self._submit.script)  # a restarted Redis
            for i, reply in zip(pending, replies, strict=True):
                if isinstance(reply, NoScriptError):  # nothing applied: send it again
                    stale.append(i)
                    continue
                if isinstance(reply, Exception):
                    raise reply
                status = reply[0]
                if status in ("OK", "REPLAY"):
                    result = parse_record(
                        reply[1], status == "REPLAY", self._rules_of(board_id)
                    ).screened(screening_of(i))
                    if self.replica_acks and not confirmed[nodes[i]]:
                        result = replace(result, replicated=False)
                    results[i] = result
                elif status == "STALE":
                    self._remember_rules(board_id, WriteRules.parse(reply[1]))
                    stale.append(i)
                else:
                    error = submit_error(board_id, writes[i].submission, reply[1:], screening_of(i))
                    if not isinstance(error, DomainError) or isinstance(error, BoardMissing):
                        raise error
                    results[i] = error
            if not stale:
                done = [r for r in results if r is not None]
                if len(done) != len(writes):
                    raise RuntimeError("a batch submission got no reply")
                return done
            pending = stale
        raise Unavailable("the board's rules kept changing; retry", retry_after=1, store="redis")

    def submit_call(
        self,
        board_id: str,
        submission: Submission,
        rules: WriteRules | None,
        *,
        event_id: str,
        now_ms: int,
        periods: dict[str, Period],
        idempotency: tuple[str, str] | None,
        arrival: tuple[int, int] = (0, 0),
        screening: Screening | None = None,
    ) -> tuple[list[str], list[Any]]:
        """The submit script's keys and arguments for this index (submit_args.submit_call)."""
        return submit_call(
            board_id,
            submission,
            rules,
            event_id=event_id,
            now_ms=now_ms,
            periods=periods,
            idempotency=idempotency,
            idempotency_ttl=self.idempotency_ttl,
            arrival=arrival,
            screening=screening,
        )
