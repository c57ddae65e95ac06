"""The rounds core is pure (issue 19): it reads a tournament's history as plain values (each table's
placements), imports no SQL, and ranks duels and seated tables from the games' placements alone."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction

from gateway.tournaments.rounds import History, PlayedTable, Settings, standings
from workers.games.engine import Placement, Seat


def placements(*pairs: tuple[int, int]) -> tuple[Placement, ...]:
    """(place, score) per seat."""
    return tuple(Placement(Seat(seat), place, score) for seat, (place, score) in enumerate(pairs))


def test_importing_rounds_loads_no_storage() -> None:
    probe = (
        "import sys, gateway.tournaments.rounds\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'sqlalchemy', 'sqlmodel', 'psycopg'}),"
        " sorted(m for m in sys.modules if m.startswith(('workers.sql', 'gateway.tournaments.store'))))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[] []"


def test_duels_rank_by_the_placements_winner_and_balances() -> None:
    settings = Settings("spectacular-bid", "swiss", 2, "draw", ("a", "b", "c", "d"))
    history = History((
        PlayedTable(1, 1, 0, ("a", "b"), "finished", placements((2, 0), (1, 40))),
        PlayedTable(1, 2, 0, ("c", "d"), "finished", placements((1, 170), (2, 0))),
        PlayedTable(2, 1, 0, ("b", "d"), "voided"),
    ))  # fmt: skip
    table = {s.player: s for s in standings(settings, history)}
    assert [s.player for s in standings(settings, history)] == ["b", "c", "d", "a"]  # b: a win and a voided draw
    assert table["b"].wins == Fraction(3, 2) and table["b"].points == 40 - 150
    assert table["c"].points == 170 - 150 and table["d"].wins == Fraction(1, 2)


def test_seated_tables_rank_by_shared_places_and_scores() -> None:
    settings = Settings("501", "seating", 1, "replay", ("a", "b", "c"))
    history = History((PlayedTable(1, 1, 0, ("a", "b", "c"), "finished", placements((3, 40), (1, -5), (1, -5))),))
    table = standings(settings, history)
    assert [s.player for s in table] == ["b", "c", "a"]
    shared_first = Fraction(3 + Fraction(3, 2), 2)  # two share first and second: 3 and 1½
    assert [(s.placement_points, s.score) for s in table] == [(shared_first, -5), (shared_first, -5), (0, 40)]
