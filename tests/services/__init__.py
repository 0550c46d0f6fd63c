"""The services (leaderboard/services): the use cases over real stores, with test doubles
only for what is not under test."""
