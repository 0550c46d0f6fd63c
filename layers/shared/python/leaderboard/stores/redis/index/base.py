"""What every command family of the index shares: the client, the board rules this process has
cached (each script call proves them current), the arrival clock, and the board's key spaces."""

from __future__ import annotations

import json
import time

from leaderboard.domain.leagues import League
from leaderboard.stores.redis.client import RedisLike
from leaderboard.stores.redis.errors import guarded
from leaderboard.stores.redis.keys import BoardKeys, key_spaces
from leaderboard.stores.redis.rules import WriteRules

_RULES_CACHE_SIZE = 4096


class IndexBase:
    """Each public call of the index is one round trip once warm."""

    def __init__(
        self,
        client: RedisLike,
        *,
        idempotency_ttl_seconds: int = 90_000,
        replica_acks: int = 0,
        replica_ack_timeout_ms: int = 100,
    ) -> None:
        """`replica_acks` > 0: every submission waits (WAIT, in the same round trip) until that
        many replicas have it, at most `replica_ack_timeout_ms`; one they did not confirm comes
        back `replicated=False`. Replication is asynchronous: without this, a master that
        acknowledged a write and died before its replica had it loses the write on failover."""
        self.client = client
        self.idempotency_ttl = idempotency_ttl_seconds
        self.replica_acks = replica_acks
        self.replica_ack_timeout_ms = replica_ack_timeout_ms
        # Per execution environment: the submit script's rules by board (checked on every call).
        self._rules: dict[str, WriteRules] = {}
        self._last_arrival = 0

    def _rules_of(self, board_id: str) -> WriteRules | None:
        """The board's rules, to decode the tie keys a record keeps (cached; read if unknown)."""
        return self._rules.get(board_id) or self.write_rules(board_id)

    def league_of(self, board_id: str) -> League | None:
        """The board's league as this process's cached rules have it (None: no league, or
        rules not cached: a board's first write caches them)."""
        rules = self._rules.get(board_id)
        return rules.league_config if rules is not None else None

    def _arrival(self) -> int:
        """Microseconds on this host's clock, never going back within the process."""
        self._last_arrival = max(self._last_arrival + 1, time.time_ns() // 1000)
        return self._last_arrival

    @guarded
    def write_rules(self, board_id: str) -> WriteRules | None:
        """The board's rules as the submit script checks them (cached; read if unknown)."""
        if board_id not in self._rules:
            text = self.client.get(BoardKeys(board_id).cfg)
            if text is None:
                return None
            self._remember_rules(board_id, WriteRules.parse(text))
        return self._rules[board_id]

    def _remember_rules(self, board_id: str, rules: WriteRules) -> None:
        if len(self._rules) >= _RULES_CACHE_SIZE and board_id not in self._rules:
            self._rules.pop(next(iter(self._rules)))
        self._rules[board_id] = rules

    @guarded
    def shards_of(self, board_id: str) -> int:
        """How many shards the board has (1: unsharded), from the rules this process has or
        the board's own cfg key."""
        rules = self._rules.get(board_id)
        if rules is not None:
            return rules.shards
        raw = self.client.get(BoardKeys(board_id).cfg)
        return int(json.loads(raw).get("shards", 1)) if raw else 1

    @guarded
    def key_spaces(self, board_id: str) -> list[str]:
        """The names whose keys hold the board's entries: the board's own, or its shards'."""
        return key_spaces(board_id, self.shards_of(board_id))

    @guarded
    def server_time_ms(self) -> int:
        seconds, micros = self.client.time()
        return int(seconds) * 1000 + int(micros) // 1000

    def ping(self) -> bool:
        return bool(self.client.ping())
