"""A hidden player's own view of a board: the visible board with their entry put back.

Everyone else reads a board without its hidden players. The hidden player reads it as if
only they were visible again: their entry stands at `place` (the number of visible entries
before it) with the rank it would hold, the entries after it move one place down, and on a
shared-ranks board one rank down when the reader's entry is strictly better than theirs.
Stores that cannot add the entry where they read (the archive, a sharded board) splice it in
here; the single-set read script does the same by adding the entry for its own length.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

from leaderboard.domain.read_results import Entry, Window


def centre(position: int, size: int, total: int) -> int:
    """The first position of a window of `size` centred on a position, inside the board."""
    return max(0, min(position - (size - 1) // 2, total - size))


def self_window(
    *,
    op: str,
    size: int,
    offset_or_rank: int,
    me: Entry,
    place: int,
    visible_total: int,
    first: bool,
    visible: Callable[[int, int], Sequence[Entry]],
    around_position: int | None = None,
) -> Window:
    """The window `op` of the reader's own view. `visible(start, stop)` reads the visible
    entries at positions [start, stop); `around_position`: for op 'around' of another player,
    that player's visible position."""
    total = visible_total + 1
    position: int | None = None
    if op == "page":
        start = offset_or_rank
    elif op == "around_rank":
        start = centre(offset_or_rank - 1, size, total)
    elif op == "player":
        start, size, position = place, 1, place
    else:
        if around_position is None:
            position = place
        else:
            position = around_position + (1 if place <= around_position else 0)
        start = centre(position, size, total)
    stop = start + size
    # visible positions a..b-1 cover own positions start..stop-1 (one of them is the reader's)
    low = start - 1 if start > place else start
    rows = visible(max(low, 0), stop) if stop > low else ()
    placed: list[tuple[int, Entry]] = [(place, me)]
    for i, entry in enumerate(rows):
        at = max(low, 0) + i
        if at >= place:
            at += 1
            entry = shifted(entry, me, first)
        placed.append((at, entry))
    placed.sort(key=lambda item: item[0])
    chosen = tuple(entry for at, entry in placed if start <= at < stop)
    return Window(total=total, start=start, player_position=position, entries=chosen)


def shifted(later: Entry, me: Entry, first: bool) -> Entry:
    """A visible entry after the reader's own, as the reader sees it: one rank down on a
    ties=first board, and on a shared-ranks board unless the two are equal (score and
    tie-breakers): then they share the rank."""
    if first or float(me.score) != float(later.score) or me.tiebreakers != later.tiebreakers:
        return replace(later, rank=later.rank + 1)
    return later
