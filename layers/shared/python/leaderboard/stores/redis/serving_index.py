"""The serving index as the services use it: every command family of index/ composed into one
client object (as redis-py composes its command families into `Redis`).

Where a behaviour lives: writes (index/writes.py, submit.lua), reads (index/reads.py, which
picks one_node/ or sharded/ from the board's rules), watches, visibility (hide, unhide,
remove), teams, tournaments, leagues, and the maintenance the rollover and rebuilds do (loading,
purging, rebuild, rollover, outbox). Keys: keys.py; rules: rules.py; replies: records.py.
"""

from __future__ import annotations

from leaderboard.stores.redis.index.boards import BoardCommands
from leaderboard.stores.redis.index.leagues import LeagueCommands
from leaderboard.stores.redis.index.loading import LoadingCommands
from leaderboard.stores.redis.index.outbox import OutboxCommands
from leaderboard.stores.redis.index.purging import PurgeCommands
from leaderboard.stores.redis.index.reads import ReadCommands
from leaderboard.stores.redis.index.rebuild import RebuildCommands
from leaderboard.stores.redis.index.rollover import RolloverCommands
from leaderboard.stores.redis.index.teams import TeamCommands
from leaderboard.stores.redis.index.tournaments import TournamentCommands
from leaderboard.stores.redis.index.visibility import VisibilityCommands
from leaderboard.stores.redis.index.watches import WatchCommands
from leaderboard.stores.redis.index.writes import WriteCommands


class RedisIndex(
    WriteCommands,
    ReadCommands,
    BoardCommands,
    WatchCommands,
    VisibilityCommands,
    TeamCommands,
    TournamentCommands,
    LeagueCommands,
    LoadingCommands,
    PurgeCommands,
    RebuildCommands,
    RolloverCommands,
    OutboxCommands,
):
    """All Redis access of the service but the live publisher's (live/); each public call is
    one round trip once warm (one per node touched on a sharded board)."""
