from fractions import Fraction

import pytest

from gateway.tournaments import F501Result, SbResult, standings_501, standings_sb
from gateway.tournaments.standings import placement_points


def win(a: str, b: str, balance_a: int = 300) -> SbResult:
    """a (seat 0) beats b."""
    return SbResult(a, b, a, (balance_a, 300 - balance_a))


def order(table: tuple) -> list[str]:
    return [s.player for s in table]


def test_sb_wins_then_points() -> None:
    results = [win("a", "b", 200), win("c", "d", 300), win("a", "c", 160), win("d", "b", 300)]
    table = standings_sb("abcd", results)
    # a: 2 wins, +50 +10; c and d: 1 win each, c +150 −10 = 140 above d −150 +150 = 0; b: 0 wins
    assert order(table) == ["a", "c", "d", "b"]
    assert [(s.wins, s.points, s.games) for s in table] == [(2, 60, 2), (1, 140, 2), (1, 0, 2), (0, -200, 2)]
    assert [s.rank for s in table] == [1, 2, 3, 4]


def test_sb_points_count_from_the_tournaments_starting_balance() -> None:
    results = [SbResult("a", "b", "a", (40, 0)), SbResult("c", "a", "c", (35, 5))]  # start_points 20
    table = standings_sb("abc", results, start=20)
    assert [(s.player, s.points) for s in table] == [("c", 15), ("a", 5), ("b", -20)]


def test_sb_buchholz_breaks_equal_wins_and_points() -> None:
    # x and y: one win each by the same margin; x beat the stronger opponent (s, who won twice elsewhere).
    results = [
        win("x", "s", 200),
        win("y", "w", 200),
        win("s", "p", 200),
        win("s", "q", 200),
        win("p", "x", 200),
        win("q", "y", 200),
    ]
    table = {s.player: s for s in standings_sb(["x", "y", "s", "w", "p", "q"], results)}
    assert table["x"].wins == table["y"].wins == 1
    assert table["x"].points == table["y"].points == 0
    assert table["x"].buchholz == 3  # s (2) + p (1)
    assert table["y"].buchholz == 1  # w (0) + q (1)
    assert table["x"].rank < table["y"].rank


def test_sb_head_to_head_then_name() -> None:
    # b beat a; everything else symmetric, so head-to-head puts b above a despite the name.
    results = [win("b", "a", 200), win("a", "b", 200), win("b", "a", 200), win("a", "b", 200)]
    # a perfectly even series: falls to the name
    assert order(standings_sb("ab", results)) == ["a", "b"]
    results = [win("b", "a", 200), win("a", "c", 200), win("c", "b", 200)]
    # all 1 win, 0 points, Buchholz 1: the tie is three-way, mini-table equal → names
    assert order(standings_sb("abc", results)) == ["a", "b", "c"]
    results = [win("b", "a", 200), win("a", "x", 200), win("y", "b", 200), win("x", "z", 200)]
    table = {s.player: s for s in standings_sb(["a", "b", "x", "y", "z"], results)}
    # a and b: 1 win, 0 points, Buchholz 2 each; x (1 win, 0 points) has Buchholz 1 so is not in the tie
    assert (table["a"].wins, table["a"].points, table["a"].buchholz) == (1, 0, 2)
    assert (table["b"].wins, table["b"].points, table["b"].buchholz) == (1, 0, 2)
    assert table["x"].buchholz == 1
    assert table["b"].rank < table["a"].rank  # head-to-head


def test_sb_byes_and_voided() -> None:
    void = SbResult("a", "b", None, (120, 180), voided=True)
    replay = {s.player: s for s in standings_sb("ab", [void], byes=["a"])}
    assert (replay["a"].wins, replay["a"].games, replay["b"].wins, replay["b"].games) == (1, 0, 0, 0)
    draw = {s.player: s for s in standings_sb("ab", [void], voided="draw")}
    assert draw["a"].wins == draw["b"].wins == Fraction(1, 2)
    assert draw["a"].points == draw["b"].points == 0
    assert draw["a"].buchholz == Fraction(1, 2)
    with pytest.raises(ValueError):
        standings_sb("ab", [void], voided="count")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        SbResult("a", "b", "c", (0, 300))


def test_placement_points_and_shared_ranks() -> None:
    assert placement_points({"a": 1, "b": 2, "c": 3}) == {"a": 3, "b": Fraction(3, 2), "c": 0}
    assert placement_points({"a": 1, "b": 2, "c": 3, "d": 4}) == {"a": 3, "b": 2, "c": 1, "d": 0}
    assert placement_points({"a": 1, "b": 1, "c": 3}) == {"a": Fraction(9, 4), "b": Fraction(9, 4), "c": 0}
    four = placement_points({"a": 1, "b": 2, "c": 2, "d": 4})
    assert four == {"a": 3, "b": Fraction(3, 2), "c": Fraction(3, 2), "d": 0}
    for table in ({"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 1, "c": 1, "d": 4}):
        assert sum(placement_points(table).values()) == Fraction(3, 2) * len(table)


def test_501_placement_then_score_then_name() -> None:
    r1 = F501Result({"a": 1, "b": 2, "c": 3}, {"a": -10, "b": 200, "c": 300})
    r2 = F501Result({"b": 1, "a": 2, "c": 3}, {"b": 0, "a": 150, "c": 400})
    r3 = F501Result({"d": 1, "e": 2, "f": 3}, {"d": 0, "e": 100, "f": 300})
    r4 = F501Result({"e": 1, "d": 2, "f": 3}, {"e": 0, "d": 100, "f": 300})
    table = standings_501("abcdef", [r1, r2, r3, r4])
    # a, b, d, e all have 4½; score d 100, e 100 (name), a 140, b 200
    assert order(table) == ["d", "e", "a", "b", "f", "c"]  # f 600 beats c 700
    assert table[0].placement_points == Fraction(9, 2)
    assert (table[0].score, table[2].score, table[3].score) == (100, 140, 200)


def test_501_voided_and_byes() -> None:
    done = F501Result({"a": 1, "b": 2, "c": 3}, {"a": 0, "b": 50, "c": 90})
    void = F501Result({"a": 1, "b": 2, "c": 3, "d": 4}, {}, voided=True)
    replay = {s.player: s for s in standings_501("abcde", [done, void], byes=["e"])}
    assert (replay["a"].placement_points, replay["a"].tables) == (3, 1)
    assert replay["d"].placement_points == 0
    assert replay["e"].placement_points == Fraction(3, 2)
    draw = {s.player: s for s in standings_501("abcde", [done, void], byes=["e"], voided="draw")}
    assert (draw["a"].placement_points, draw["a"].tables, draw["a"].score) == (Fraction(9, 2), 2, 0)
    assert draw["d"].placement_points == Fraction(3, 2)
    with pytest.raises(ValueError):
        F501Result({"a": 1, "b": 2}, {"a": 0, "b": 1})
