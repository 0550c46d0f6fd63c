"""PostgreSQL, the system of record: score events and standings, boards, the archive, hidden
players, hook verdicts, and the migrations that make its tables (migrations/*.sql)."""
