"""The live publisher's reads of the serving index (one-node and sharded boards) and its lease."""
