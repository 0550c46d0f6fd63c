"""Round trips counted, not assumed: a connection that counts what it writes to the socket."""

from __future__ import annotations

from redis.connection import Connection


class CountingConnection(Connection):
    """Counts what is written to the socket: one send = one round trip."""

    sends = 0

    def send_packed_command(self, command, check_health=True):  # type: ignore[override]
        CountingConnection.sends += 1
        return super().send_packed_command(command, check_health)


def counted(call):
    before = CountingConnection.sends
    result = call()
    return CountingConnection.sends - before, result
