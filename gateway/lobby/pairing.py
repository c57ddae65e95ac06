"""Quick pairing, pure: who sits with whom, from the waiting players' ratings and wait times at `now`.

A player accepts an opponent whose rating (openskill ordinal, μ − 3σ, the leaderboard's number) is
within their allowed gap, which widens with the time they waited: `base + per_s × waited`. A table
is made only when every pair at it is within the gap of *both* players (the smaller of the two
gaps: the newer arrival's), so nobody is given a wider gap than they waited for.

Two seats: a maximum-cardinality, then maximum-weight matching (networkx) over the acceptable pairs,
weight favouring small gaps and long waits. Three or four seats (501♠): the longest waiter first takes
the nearest-rated players that keep the table within everyone's gap, four when four fit, else three.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import networkx as nx

NEIGHBOURS = 12
"""Each player is weighed against the next this many by rating: the matching stays fast on a long
queue of equal ratings (many new players), and nobody near in rating is left out."""


@dataclass(frozen=True, slots=True)
class Widening:
    """How far apart ratings may be: `base` at once, `per_s` more each second waited."""

    base: float = 3.0
    per_s: float = 0.5

    def allowed(self, waited_ms: int) -> float:
        return self.base + self.per_s * max(0, waited_ms) / 1000


@dataclass(frozen=True, slots=True)
class Waiting:
    player_id: int
    ordinal: float
    joined_ms: int


@dataclass(frozen=True, slots=True)
class Table:
    players: tuple[Waiting, ...]
    """Seat order: the longest waiter first."""

    @property
    def gap(self) -> float:
        ordinals = [w.ordinal for w in self.players]
        return max(ordinals) - min(ordinals)


def allowed_gap(group: Sequence[Waiting], now_ms: int, widening: Widening) -> float:
    """The gap every player of `group` accepts at `now_ms`: that of the one who waited least."""
    return min(widening.allowed(now_ms - w.joined_ms) for w in group)


def fits(group: Sequence[Waiting], now_ms: int, widening: Widening) -> bool:
    ordinals = [w.ordinal for w in group]
    return max(ordinals) - min(ordinals) <= allowed_gap(group, now_ms, widening)


def pair(
    waiting: Sequence[Waiting], seats: tuple[int, ...], now_ms: int, widening: Widening = Widening()
) -> list[Table]:
    """Tables for the waiting players of one queue (one game and options). `seats`: the table sizes the
    game takes, the preferred first (2,) or (4, 3). A player appears at most once (repeats are dropped)."""
    unique = list({w.player_id: w for w in sorted(waiting, key=_seniority)}.values())
    unique.sort(key=_seniority)
    if seats == (2,):
        return _pairs(unique, now_ms, widening)
    return _groups(unique, sorted(seats, reverse=True), now_ms, widening)


def _seniority(w: Waiting) -> tuple[int, int]:
    return (w.joined_ms, w.player_id)


def _pairs(waiting: list[Waiting], now_ms: int, widening: Widening) -> list[Table]:
    graph = nx.Graph()
    by_rating = sorted(waiting, key=lambda w: w.ordinal)
    for i, a in enumerate(by_rating):
        for b in by_rating[i + 1 : i + 1 + NEIGHBOURS]:
            if b.ordinal - a.ordinal > widening.allowed(now_ms - min(a.joined_ms, b.joined_ms)):
                break  # sorted by rating: every later b is further still
            if fits((a, b), now_ms, widening):
                waited = 2 * now_ms - a.joined_ms - b.joined_ms
                graph.add_edge(a.player_id, b.player_id, weight=1e6 - (b.ordinal - a.ordinal) * 1e3 + waited / 1e3)
    found = nx.max_weight_matching(graph, maxcardinality=True)
    index = {w.player_id: w for w in waiting}
    tables = [Table(tuple(sorted((index[x], index[y]), key=_seniority))) for x, y in found]
    return sorted(tables, key=lambda t: _seniority(t.players[0]))


def _groups(waiting: list[Waiting], sizes: list[int], now_ms: int, widening: Widening) -> list[Table]:
    free = list(waiting)
    tables: list[Table] = []
    while len(free) >= sizes[-1]:
        anchor, rest = free[0], free[1:]
        group = [anchor]
        for other in sorted(rest, key=lambda w: (abs(w.ordinal - anchor.ordinal), _seniority(w))):
            if len(group) == sizes[0]:
                break
            if fits([*group, other], now_ms, widening):
                group.append(other)
        if len(group) >= sizes[-1]:
            chosen = {w.player_id for w in group}
            tables.append(Table(tuple(sorted(group, key=_seniority))))
            free = [w for w in free if w.player_id not in chosen]
        else:
            free = rest  # the anchor waits on; the others may still fit each other
    return tables
