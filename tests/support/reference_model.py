"""A small, obviously-correct model of a board, for checking the Redis scripts against.

It keeps plain dicts and sorts on every read; nothing here is clever. Orderings mirror what the
API promises: better score first, then each tie-breaker column in its own direction; ties by
arrival for ties=first, otherwise by player id in the direction of the sort (Redis orders equal
scores by member).

Hidden players (issue 23): every read is of a view, the board without its hidden players but
the one reading (`viewer`), whose own entry stays where it would stand. max_entries keeps the
best entries of the whole board, hidden ones included.

Team boards (issue 23): a submission naming a team adds what it changed in the player's entry
to the player's contribution to that team (`sum`), or sets the contribution to the entry
(`best`); a team's score is the sum (kept with the same float operations, in the same order,
as Redis) or the best of its visible members' contributions, and a team is ranked while it has
a visible member. Teams and members rank by score alone, equal scores sharing a rank.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from leaderboard.domain.boards import BoardConfig
from leaderboard.domain.periods import current_periods

SAFE = 2**53 - 1


class ModelError(Exception):
    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass
class Row:
    player: str
    score: float
    stamp: int
    tb: tuple[int, ...] = ()  # the board's tie-breaker columns, in order


@dataclass
class ModelBoard:
    cfg: BoardConfig
    keys: dict[tuple[str, str | None], dict[str, Row]] = field(default_factory=dict)
    open_kinds: dict[str, str] = field(default_factory=dict)
    meta: dict[str, dict[str, Any]] = field(default_factory=dict)
    seq: int = 0
    hidden: set[str] = field(default_factory=set)
    # (period, region) -> team -> player -> contribution (hidden members' too)
    contributions: dict[tuple[str, str | None], dict[str, dict[str, float]]] = field(
        default_factory=dict
    )
    # (period, region) -> team -> score, for `sum` boards (teams with a visible member)
    team_sums: dict[tuple[str, str | None], dict[str, float]] = field(default_factory=dict)

    # --- ordering and ranks ---------------------------------------------------------------
    def tuple_of(self, row: Row) -> tuple[float, ...]:
        """(score, tie-breakers...) with every column turned to compare like the score: a
        greater tuple is a better one on a desc board, a smaller one on an asc board."""
        turned = (
            v if c.sort == self.cfg.sort else -v
            for c, v in zip(self.cfg.tiebreakers, row.tb, strict=True)
        )
        return (row.score, *turned)

    def ordered(self, period: str, region: str | None, viewer: str | None = None) -> list[Row]:
        """The board as `viewer` sees it: without its hidden players, but the viewer."""
        rows = [
            r
            for r in self.keys.get((period, region), {}).values()
            if r.player not in self.hidden or r.player == viewer
        ]
        return self._sorted(rows)

    def ordered_all(self, period: str, region: str | None) -> list[Row]:
        """Every entry, hidden ones too (what max_entries keeps the best of)."""
        return self._sorted(list(self.keys.get((period, region), {}).values()))

    def _sorted(self, rows: list[Row]) -> list[Row]:
        desc = self.cfg.sort == "desc"
        if self.cfg.ties == "first":
            sign = -1 if desc else 1
            return sorted(rows, key=lambda r: (*(sign * x for x in self.tuple_of(r)), r.stamp))
        return sorted(rows, key=lambda r: (*self.tuple_of(r), r.player), reverse=desc)

    def rank_of(self, rows: list[Row], index: int) -> int:
        if self.cfg.ties == "first":
            return index + 1
        mine = self.tuple_of(rows[index])
        desc = self.cfg.sort == "desc"
        return 1 + sum(
            1 for r in rows if (self.tuple_of(r) > mine if desc else self.tuple_of(r) < mine)
        )

    # --- writes ---------------------------------------------------------------------------
    def submit(
        self,
        player: str,
        score: float,
        region: str | None,
        metadata: dict[str, Any] | None,
        now: datetime,
        tiebreakers: dict[str, int] | None = None,
        team: str | None = None,
    ) -> tuple[bool, list[tuple]]:
        cfg = self.cfg
        if region is not None and region not in (cfg.regions or ()):
            raise ModelError("unknown_region")
        names = [c.name for c in cfg.tiebreakers]
        if set(tiebreakers or ()) != set(names) and (names or tiebreakers):
            raise ModelError("tiebreakers")
        if team is not None and cfg.teams is None:
            raise ModelError("teams")
        tb = tuple((tiebreakers or {})[name] for name in names)
        if cfg.mode == "increment":
            if cfg.max_increment is not None and abs(score) > cfg.max_increment:
                raise ModelError("max_increment")
        elif (cfg.min_score is not None and score < cfg.min_score) or (
            cfg.max_score is not None and score > cfg.max_score
        ):
            raise ModelError("bounds")
        periods = current_periods(now)
        targets = [(kind, periods[kind].id, None) for kind in periods]
        if region is not None:
            targets += [(kind, periods[kind].id, region) for kind in periods]
        plan = []
        desc = cfg.sort == "desc"
        for kind, pid, reg in targets:
            if kind not in cfg.periods:
                continue
            old_row = self.keys.get((pid, reg), {}).get(player)
            old = None if old_row is None else old_row.score
            new_tb = tb
            if cfg.mode == "increment":
                new = (old or 0.0) + score
                if (
                    abs(new) > SAFE
                    or (cfg.min_score is not None and new < cfg.min_score)
                    or (cfg.max_score is not None and new > cfg.max_score)
                ):
                    raise ModelError("bounds")
            elif cfg.mode == "best":  # the whole tuple is compared
                assert old_row is None or old is not None
                mine = self.tuple_of(Row(player, score, 0, tb))
                was = None if old_row is None else self.tuple_of(old_row)
                better = was is None or (mine > was if desc else mine < was)
                new = score if better else old
                if not better:
                    assert old_row is not None
                    new_tb = old_row.tb
            else:
                new = score
            prev_rank = None
            if old_row is not None:
                rows_before = self.ordered(pid, reg, player)
                at = next(i for i, r in enumerate(rows_before) if r.player == player)
                prev_rank = self.rank_of(rows_before, at)
            old_tb = None if old_row is None else old_row.tb
            plan.append((pid, reg, old, float(new), prev_rank, old_tb, new_tb))
        self.seq += 1
        applied = False
        standings = []
        victims: list[str] = []
        for pid, reg, old, new, prev_rank, old_tb, new_tb in plan:
            rows = self.keys.setdefault((pid, reg), {})
            present = True
            if old is None or new != old or new_tb != old_tb:
                applied = True
                rows[player] = Row(player, new, self.seq, new_tb)
                if team is not None:
                    self._contribute((pid, reg), team, player, old, new)
                if cfg.max_entries is not None:
                    ordered = self.ordered_all(pid, reg)
                    for victim in ordered[cfg.max_entries :]:
                        del rows[victim.player]
                        if victim.player == player:
                            present = False
                        victims.append(victim.player)
            rank = None
            if present:
                ordered = self.ordered(pid, reg, player)
                index = next(i for i, r in enumerate(ordered) if r.player == player)
                rank = self.rank_of(ordered, index)
            # (period, region, score, rank, previous score, previous rank): the entry before
            standings.append((pid, reg, new, rank, old, prev_rank, self._tb_json(new_tb)))
        for victim_id in victims:  # decided after every key: a player may leave one, enter another
            if not self.present_anywhere(victim_id):
                self.meta.pop(victim_id, None)
        if metadata is not None and self.present_anywhere(player):
            self.meta[player] = metadata
        return applied, standings

    # --- teams ---------------------------------------------------------------------------
    def _contribute(
        self, key: tuple[str, str | None], team: str, player: str, old: float | None, new: float
    ) -> None:
        members = self.contributions.setdefault(key, {}).setdefault(team, {})
        if self.cfg.teams == "sum":
            delta = new - (old if old is not None else 0.0)
            members[player] = members.get(player, 0.0) + delta
            if player not in self.hidden:
                sums = self.team_sums.setdefault(key, {})
                sums[team] = sums.get(team, 0.0) + delta
        else:
            members[player] = new

    def _visible_members(self, key: tuple[str, str | None], team: str) -> list[str]:
        members = self.contributions.get(key, {}).get(team, {})
        return [p for p in members if p not in self.hidden]

    def set_hidden(self, player: str, hidden: bool) -> None:
        """Hide a player, or show them again: their contributions leave (join) the teams'."""
        if hidden == (player in self.hidden):
            return
        if hidden:
            self.hidden.add(player)
        else:
            self.hidden.discard(player)
        if self.cfg.teams != "sum":
            return  # `best` scores follow from the visible members
        for key, teams in self.contributions.items():
            for team, members in teams.items():
                if player not in members:
                    continue
                sums = self.team_sums.setdefault(key, {})
                if hidden and not self._visible_members(key, team):
                    sums.pop(team, None)
                elif hidden:
                    sums[team] = sums[team] + -members[player]
                elif team in sums:
                    sums[team] = sums[team] + members[player]
                else:
                    sums[team] = members[player]

    def teams_ranked(self, period: str, region: str | None) -> list[tuple[str, float]]:
        key = (period, region)
        if self.cfg.teams == "sum":
            scores = dict(self.team_sums.get(key, {}))
        else:
            pick = max if self.cfg.sort == "desc" else min
            scores = {
                team: pick(members[p] for p in self._visible_members(key, team))
                for team, members in self.contributions.get(key, {}).items()
                if self._visible_members(key, team)
            }
        return self._plain(scores)

    def members_ranked(
        self, period: str, region: str | None, team: str, viewer: str | None = None
    ) -> list[tuple[str, float]]:
        members = self.contributions.get((period, region), {}).get(team, {})
        return self._plain(
            {p: c for p, c in members.items() if p not in self.hidden or p == viewer}
        )

    def _plain(self, scores: dict[str, float]) -> list[tuple[str, float]]:
        """By score, equal scores by id in the direction of the sort (as Redis orders them)."""
        return sorted(
            scores.items(), key=lambda item: (item[1], item[0]), reverse=self.cfg.sort == "desc"
        )

    def plain_rank(self, rows: list[tuple[str, float]], index: int) -> int:
        """Shared ranks: 1 + the strictly better scores."""
        mine = rows[index][1]
        desc = self.cfg.sort == "desc"
        return 1 + sum(1 for _, score in rows if (score > mine if desc else score < mine))

    def present_anywhere(self, player: str) -> bool:
        return any(player in rows for rows in self.keys.values())

    def delete(self, player: str) -> None:
        for rows in self.keys.values():
            rows.pop(player, None)
        self.meta.pop(player, None)

    # --- reads ----------------------------------------------------------------------------
    def _tb_json(self, tb: tuple[int, ...]) -> dict[str, int] | None:
        if not self.cfg.tiebreakers:
            return None
        return {c.name: v for c, v in zip(self.cfg.tiebreakers, tb, strict=True)}

    def entry(self, rows: list[Row], index: int) -> dict[str, Any]:
        row = rows[index]
        entry = {
            "rank": self.rank_of(rows, index),
            "player_id": row.player,
            "score": row.score,
            "metadata": self.meta.get(row.player),
        }
        if self.cfg.tiebreakers:
            entry["tiebreakers"] = self._tb_json(row.tb)
        if row.player in self.hidden:  # only ever the viewer's own entry
            entry["hidden"] = True
        return entry

    def page(
        self, period: str, region: str | None, offset: int, limit: int, viewer: str | None = None
    ) -> tuple[int, list]:
        rows = self.ordered(period, region, viewer)
        return len(rows), [
            self.entry(rows, i) for i in range(offset, min(len(rows), offset + limit))
        ]

    @staticmethod
    def _centre(position: int, size: int, total: int) -> int:
        start = position - (size - 1) // 2
        start = min(start, total - size)
        return max(start, 0)

    def around_rank(
        self, period: str, region: str | None, rank: int, limit: int, viewer: str | None = None
    ) -> tuple[int, list]:
        rows = self.ordered(period, region, viewer)
        start = self._centre(rank - 1, limit, len(rows))
        return self.page(period, region, start, limit, viewer)

    def player(
        self, period: str, region: str | None, player: str, viewer: str | None = None
    ) -> dict[str, Any] | None:
        rows = self.ordered(period, region, viewer)
        for i, row in enumerate(rows):
            if row.player == player:
                return self.entry(rows, i) | {"total": len(rows)}
        return None

    def around(
        self, period: str, region: str | None, player: str, count: int, viewer: str | None = None
    ) -> tuple[int, list] | None:
        rows = self.ordered(period, region, viewer)
        for i, row in enumerate(rows):
            if row.player == player:
                return self.page(period, region, self._centre(i, count, len(rows)), count, viewer)
        return None

    # --- player-centred reads -------------------------------------------------------------
    def players(
        self, period: str, region: str | None, ids: list[str], viewer: str | None = None
    ) -> tuple[int, list, list]:
        """(total, entries of the ids with an entry in board order, the other ids in order)."""
        rows = self.ordered(period, region, viewer)
        wanted = list(dict.fromkeys(ids))
        entries = [self.entry(rows, i) for i, r in enumerate(rows) if r.player in wanted]
        found = {e["player_id"] for e in entries}
        return len(rows), entries, [p for p in wanted if p not in found]

    def standings(
        self, player: str, now: datetime, region: str | None, viewer: str | None = None
    ) -> list[tuple]:
        """(period, kind, region, rank, score, total) on every current period the board keeps:
        global first, then `region`, or every region of the board."""
        periods = current_periods(now)
        regions = [None, region] if region else [None, *(self.cfg.regions or ())]
        out = []
        for where in regions:
            for kind in ("all-time", "daily", "weekly", "monthly"):
                if kind not in self.cfg.periods:
                    continue
                found = self.player(periods[kind].id, where, player, viewer)
                if found is not None:
                    out.append(
                        (
                            periods[kind].id,
                            kind,
                            where,
                            found["rank"],
                            found["score"],
                            found["total"],
                        )
                        + ((found["tiebreakers"],) if "tiebreakers" in found else ())
                        + ((True,) if found.get("hidden") else ())
                    )
        return out
