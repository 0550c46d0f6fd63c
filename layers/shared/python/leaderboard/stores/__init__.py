"""One adapter per store: Redis/Valkey (serving index), PostgreSQL (system of record), SQS."""
