"""How `tablehall bench service` spreads its bots over connections: enough connections that none carries more
matches than the per-connection rate lets through at full speed, and each new match on the least busy one."""

from __future__ import annotations

CHANNELS = 16
"""Bots spread over at least this many connections, as many devices would be (one HTTP/2 connection
serialises)."""
MATCHES_PER_CHANNEL = 3
"""And at most this many matches in flight on one: a match runs ~90 commands/s at full speed here, and a
connection may send 300 requests a second (`TABLEHALL_RATE_PER_S`); with more, the bench measured its own
throttling (at 200 in flight on 16 connections: streams ended `rate_limited` and resumed). Not fewer:
each connection costs the service a little (two a connection at 50 in flight: −3.5 % commands/s)."""


def channels(concurrency: int) -> int:
    """Connections for `concurrency` matches in flight."""
    return max(CHANNELS, -(-concurrency // MATCHES_PER_CHANNEL))


class Spread:
    """Which connection the next match plays on: the one with the fewest matches in flight, so that no
    connection carries more than `MATCHES_PER_CHANNEL` (by match number, matches that ended at different
    times left some connections with 4 or 5: their requests passed the per-connection rate and streams
    were refused `rate_limited`, which the bench then measured)."""

    def __init__(self, connections: int) -> None:
        self.playing = [0] * connections

    def take(self) -> int:
        chosen = min(range(len(self.playing)), key=self.playing.__getitem__)
        self.playing[chosen] += 1
        return chosen

    def give_back(self, connection: int) -> None:
        self.playing[connection] -= 1
