"""The sharded layout of a board's reads (board_reads.BoardReads): a board spread over K shards."""
