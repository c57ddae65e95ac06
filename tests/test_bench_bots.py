"""`tablehall bench bots`: a tiny run of every default pairing in both games, the Wilson interval, the
pairings it accepts, and what the benchmark plays (seats rotated, matches finished, the same deals again)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tablehall.bench_bots import Pairing, play, schedule, tally, wilson
from workers.bots import Level
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID


def test_a_tiny_run_prints_every_pairing_of_both_games() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tablehall.cli", "bench", "bots", "--matches", "2", "--move-ms", "5"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "search budget 5 ms per move" in out
    for shown in ("search vs greedy", "greedy vs random", "search vs 2 × greedy", "greedy vs 2 × random"):
        assert shown in out
    assert out.count("[") >= 4 and "moves/s" in out


def test_the_wilson_interval() -> None:
    low, high = wilson(7, 10)
    assert round(low, 4) == 0.3968 and round(high, 4) == 0.8922
    assert wilson(0, 0) == (0.0, 1.0)
    assert wilson(10, 10)[1] == pytest.approx(1.0) and wilson(10, 10)[0] > 0.69


def test_pairings_and_seats() -> None:
    assert Pairing.parse("search:greedy") == Pairing(Level.SEARCH, Level.GREEDY)
    for bad in ("search", "search:best", "strong:greedy"):
        with pytest.raises(ValueError):
            Pairing.parse(bad)
    duel = schedule(SPECTACULAR_BID, Pairing(Level.SEARCH, Level.GREEDY), 4, 1, 5, None)
    assert [m.first for m in duel] == [0, 1, 0, 1]
    assert duel[1].levels == (Level.GREEDY, Level.SEARCH)
    table = schedule(FIVE_OH_ONE, Pairing(Level.GREEDY, Level.RANDOM), 3, 1, 5, None)
    assert [m.levels.index(Level.GREEDY) for m in table] == [0, 1, 2]


def test_a_match_with_an_iteration_budget_repeats_and_is_tallied() -> None:
    games = schedule(FIVE_OH_ONE, Pairing(Level.SEARCH, Level.RANDOM), 1, 2, 5, 10)
    first, again = play(games[0]), play(games[0])
    assert first == again and first.places is not None and sorted(first.places)[0] == 1
    counted = tally(games, [first], Pairing(Level.SEARCH, Level.RANDOM), 1.0)
    assert counted.matches == 1 and counted.pairs == 2 and counted.moves == first.moves


def test_a_bad_pair_is_refused_with_exit_2() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "tablehall.cli", "bench", "bots", "--pair", "search-greedy"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert run.returncode == 2 and "LEVEL:LEVEL" in run.stderr and "Traceback" not in run.stderr
