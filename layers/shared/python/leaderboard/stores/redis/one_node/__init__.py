"""The one-node layout of a board's reads (board_reads.BoardReads)."""
