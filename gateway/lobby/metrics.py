"""The Lobby's metrics (prometheus-client, the default registry), each game's label set bound at import
so every series is born at 0. The gauges are set by the process whose loop holds the pairing lease
(the others hold 0): summing over gateways gives the queue."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from workers.games.catalog import names

WAIT_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 30.0, 60.0, 120.0, 300.0, 600.0)
GAP_BUCKETS = (0.0, 0.5, 1.0, 2.0, 3.0, 5.0, 8.0, 13.0, 21.0, 34.0, 55.0)
SOURCES = ("queue", "challenge", "bot")

_QUEUE_LENGTH = Gauge("tablehall_lobby_queue_length", "Players waiting in the Lobby's queue, by game.", ["game"])
_OLDEST = Gauge(
    "tablehall_lobby_oldest_wait_seconds",
    "How long the longest waiter of the Lobby's queue has waited, by game.",
    ["game"],
)
_WAIT = Histogram(
    "tablehall_lobby_wait_seconds",
    "From joining the Lobby's queue to being seated at a table, by game.",
    ["game"],
    buckets=WAIT_BUCKETS,
)
_PAIRINGS = Counter(
    "tablehall_lobby_pairings_total",
    "Tables the Lobby made, by game and source: queue (rated pairing), challenge (taken) or bot (PlayBot).",
    ["game", "source"],
)
_GAP = Histogram(
    "tablehall_lobby_rating_gap",
    "Rating gap (ordinal, μ − 3σ) between the highest and lowest rated player of a table the queue made, by game.",
    ["game"],
    buckets=GAP_BUCKETS,
)

QUEUE_LENGTH = {game: _QUEUE_LENGTH.labels(game) for game in names()}
OLDEST_WAIT = {game: _OLDEST.labels(game) for game in names()}
WAIT = {game: _WAIT.labels(game) for game in names()}
PAIRINGS = {(game, source): _PAIRINGS.labels(game, source) for game in names() for source in SOURCES}
GAP = {game: _GAP.labels(game) for game in names()}


def queue_state(waiting: list[tuple[str, int]], now_ms: int) -> None:
    """Set the gauges from everyone waiting: (game, joined ms)."""
    for game in names():
        joined = [j for g, j in waiting if g == game]
        QUEUE_LENGTH[game].set(len(joined))
        OLDEST_WAIT[game].set(max(0, now_ms - min(joined)) / 1000 if joined else 0)


def clear() -> None:
    """A loop that lost the lease: the queue is another process's to report."""
    queue_state([], 0)
