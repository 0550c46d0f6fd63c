"""Pure rules of the leaderboard: boards, periods, scores, ranking, events. No I/O, no AWS."""
