"""501♠ table seating: tables of three, or four (the dealer sits out each hand), balanced by rank.

Sizes: seat as many players as possible, and among those choices use as few tables of four as possible
(a table of four plays the same game with one idle seat per hand, so three is the natural size). Hence:
n divisible by 3 → all tables of three (12 → 3+3+3+3, not 4+4+4); n ≡ 1 (mod 3) → one table of four;
n ≡ 2 (mod 3) → two tables of four. Byes only when no such split exists: n = 1 or 2 (everyone has a bye)
and n = 5 (one table of four and one bye). So 9 → 3+3+3, 10 → 3+3+4, 11 → 3+4+4, 12 → 3+3+3+3.

Byes go to the lowest-ranked players without a previous bye (then the lowest-ranked with fewest byes).

Balance: the seated players, best first, are dealt to the tables in a serpentine (snake): row one left
to right, row two right to left, and so on; tables of four come first, and the fourth row (which only
they have) continues the snake over them. Each table therefore gets exactly one player from each band of
ranks (the top T players are at T different tables, the next T likewise), and the rank sums of the
tables of three differ by at most the number of tables. Seats at a table are listed best-ranked first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.tournaments.model import Bye, PlayerId, Table501, check_unique


@dataclass(frozen=True, slots=True)
class Seating501:
    tables: tuple[Table501, ...]
    byes: tuple[Bye, ...]


def table_sizes_501(n: int) -> tuple[int, ...]:
    """Table sizes for n players, tables of four first (see the module docstring)."""
    if n < 0:
        raise ValueError("negative player count")
    fours = n % 3  # 3a + 4b = n forces b ≡ n (mod 3)
    while fours > 0 and 4 * fours > n:
        fours -= 1  # cannot seat everyone: fewer fours, the remainder takes byes
    threes = (n - 4 * fours) // 3
    return (4,) * fours + (3,) * threes


def seat_501(ranked: Sequence[PlayerId], previous_byes: Mapping[PlayerId, int] | None = None) -> Seating501:
    """Seat one 501♠ round. `ranked` is the current ranking, best first."""
    players = list(ranked)
    check_unique(players)
    byes_so_far = previous_byes or {}
    sizes = table_sizes_501(len(players))
    bye_count = len(players) - sum(sizes)
    bye_players: list[PlayerId] = []
    for _ in range(bye_count):
        fewest = min(byes_so_far.get(p, 0) for p in players if p not in bye_players)
        chosen = [p for p in players if p not in bye_players and byes_so_far.get(p, 0) == fewest][-1]
        bye_players.append(chosen)
    seated = [p for p in players if p not in bye_players]
    seats: list[list[PlayerId]] = [[] for _ in sizes]
    position = 0
    row = 0
    while position < len(seated):
        open_tables = [t for t, size in enumerate(sizes) if size > row]
        order = open_tables if row % 2 == 0 else list(reversed(open_tables))
        for t in order:
            seats[t].append(seated[position])
            position += 1
        row += 1
    tables = tuple(Table501(tuple(s)) for s in seats)
    byes = tuple(Bye(p) for p in players if p in bye_players)
    return Seating501(tables, byes)
