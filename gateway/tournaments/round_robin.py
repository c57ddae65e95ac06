"""Round robin for Spectacular Bid (two players per table) by the circle method.

Players are indexed in the order given. With n even there are n−1 rounds; with n odd a phantom joins
and whoever meets it has the bye, giving n rounds with exactly one bye each. Every pair meets exactly once.

Seats: the circle method decides who meets whom; seat 0 is then decided by a balanced orientation of the
complete graph, independent of the round. With m = n if n is odd, else n+1 (the phantom), player i takes
seat 0 against player j exactly when (j − i) mod m is in 1..(m−1)/2. Each player then has seat 0 in
(m−1)/2 of their m−1 potential games, so seat 0 and seat 1 counts differ by at most one (zero when n is
odd, one when n is even, which is the best possible: n−1 games is odd).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gateway.tournaments.model import Bye, PlayerId, SbPairing, check_unique


@dataclass(frozen=True, slots=True)
class RoundRobinRound:
    number: int  # 1-based
    pairings: tuple[SbPairing, ...]
    bye: Bye | None


def round_robin(players: Sequence[PlayerId]) -> tuple[RoundRobinRound, ...]:
    """All rounds of a single round robin among `players` (at least two)."""
    ids = list(players)
    check_unique(ids)
    n = len(ids)
    if n < 2:
        raise ValueError("a round robin needs at least two players")
    m = n if n % 2 == 1 else n + 1  # odd modulus for the seat orientation
    slots: list[int | None] = list(range(n))
    if n % 2 == 1:
        slots.append(None)  # the phantom: meeting it is a bye
    size = len(slots)
    rounds: list[RoundRobinRound] = []
    rotating = slots[1:]
    for number in range(1, size):
        circle = [slots[0], *rotating]
        pairings: list[SbPairing] = []
        bye: Bye | None = None
        for k in range(size // 2):
            a, b = circle[k], circle[size - 1 - k]
            if a is None or b is None:
                real = b if a is None else a
                assert real is not None
                bye = Bye(ids[real])
                continue
            first, second = (a, b) if (b - a) % m <= (m - 1) // 2 else (b, a)
            pairings.append(SbPairing(ids[first], ids[second]))
        rounds.append(RoundRobinRound(number, tuple(pairings), bye))
        rotating = [rotating[-1], *rotating[:-1]]
    return tuple(rounds)
