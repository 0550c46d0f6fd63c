"""The HTTP glue (leaderboard/api): bearer tokens checked by the functions themselves."""
