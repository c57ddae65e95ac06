from collections import Counter
from itertools import combinations

import pytest

from gateway.tournaments import round_robin


def names(n: int) -> list[str]:
    return [f"p{i:02d}" for i in range(n)]


@pytest.mark.parametrize("n", range(2, 13))
def test_every_pair_meets_exactly_once(n: int) -> None:
    players = names(n)
    rounds = round_robin(players)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    met = Counter(p.players() for r in rounds for p in r.pairings)
    assert set(met) == {frozenset(pair) for pair in combinations(players, 2)}
    assert set(met.values()) == {1}


@pytest.mark.parametrize("n", range(2, 13))
def test_each_player_once_per_round_and_byes(n: int) -> None:
    players = names(n)
    rounds = round_robin(players)
    for r in rounds:
        seen = [q for p in r.pairings for q in (p.seat0, p.seat1)] + ([r.bye.player] if r.bye else [])
        assert sorted(seen) == players
        assert (r.bye is not None) == (n % 2 == 1)
    if n % 2 == 1:
        assert sorted(r.bye.player for r in rounds if r.bye) == players  # one bye each


@pytest.mark.parametrize("n", range(2, 13))
def test_seats_balanced(n: int) -> None:
    rounds = round_robin(names(n))
    seat0 = Counter(p.seat0 for r in rounds for p in r.pairings)
    seat1 = Counter(p.seat1 for r in rounds for p in r.pairings)
    for player in names(n):
        assert abs(seat0[player] - seat1[player]) <= (1 if n % 2 == 0 else 0)


def test_rejects_duplicates_and_too_few() -> None:
    with pytest.raises(ValueError):
        round_robin(["a", "a", "b"])
    with pytest.raises(ValueError):
        round_robin(["a"])
