"""The domain (leaderboard/domain): pure rules, no server and no I/O."""
