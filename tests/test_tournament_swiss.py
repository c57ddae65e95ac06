import random
from collections import Counter
from dataclasses import replace

import pytest

from gateway.tournaments import SwissPlayer, pair_swiss


def play_swiss(n: int, rounds: int, seed: int) -> tuple[list[tuple[frozenset[str], ...]], list[str | None], int]:
    """Play `rounds` Swiss rounds among n players with seeded random results; ranking by score then seed."""
    rng = random.Random(seed)
    seeds = [f"p{i:02d}" for i in range(n)]
    state = {p: SwissPlayer(p, 0.0) for p in seeds}
    history: list[tuple[frozenset[str], ...]] = []
    byes: list[str | None] = []
    repeats = 0
    for _ in range(rounds):
        ranked = sorted(state.values(), key=lambda s: (-s.score, seeds.index(s.player)))
        rnd = pair_swiss(ranked)
        repeats += rnd.repeats
        history.append(tuple(p.players() for p in rnd.pairings))
        byes.append(rnd.bye.player if rnd.bye else None)
        if rnd.bye:
            b = state[rnd.bye.player]
            state[b.player] = replace(b, score=b.score + 1, byes=b.byes + 1)
        for pairing in rnd.pairings:
            winner = rng.choice([pairing.seat0, pairing.seat1])
            for seat, me, other in ((0, pairing.seat0, pairing.seat1), (1, pairing.seat1, pairing.seat0)):
                s = state[me]
                state[me] = replace(
                    s,
                    score=s.score + (1 if me == winner else 0),
                    opponents=s.opponents | {other},
                    seat0=s.seat0 + (seat == 0),
                    seat1=s.seat1 + (seat == 1),
                    last_seat=seat,
                )
    return history, byes, repeats


@pytest.mark.parametrize("seed", range(10))
def test_no_repeat_pairing_16_players_5_rounds(seed: int) -> None:
    history, byes, repeats = play_swiss(16, 5, seed)
    met = Counter(pair for rnd in history for pair in rnd)
    assert max(met.values()) == 1
    assert repeats == 0
    assert byes == [None] * 5
    for rnd in history:
        assert len(rnd) == 8
        assert len(frozenset().union(*rnd)) == 16


@pytest.mark.parametrize("seed", range(10))
def test_odd_count_byes_15_players_5_rounds(seed: int) -> None:
    history, byes, repeats = play_swiss(15, 5, seed)
    assert None not in byes
    assert len(set(byes)) == 5  # nobody gets two byes
    assert repeats == 0
    assert max(Counter(pair for rnd in history for pair in rnd).values()) == 1


def test_bye_goes_to_lowest_ranked_without_previous_bye() -> None:
    ranked = [SwissPlayer(f"p{i}", 5 - i) for i in range(4)] + [SwissPlayer("p4", 0, byes=1)]
    assert pair_swiss(ranked).bye is not None
    assert pair_swiss(ranked).bye.player == "p3"  # p4 is last but already had one
    everyone_had_one = [replace(p, byes=1) for p in ranked]
    assert pair_swiss(everyone_had_one).bye.player == "p4"


def test_pairs_within_score_groups_when_possible() -> None:
    # After round one of eight players: four winners (1) and four losers (0).
    ranked = [SwissPlayer(f"w{i}", 1.0) for i in range(4)] + [SwissPlayer(f"l{i}", 0.0) for i in range(4)]
    rnd = pair_swiss(ranked)
    for pairing in rnd.pairings:
        assert pairing.seat0[0] == pairing.seat1[0]
    # Dutch shape inside a group: top half meets bottom half.
    assert {p.players() for p in rnd.pairings} == {
        frozenset({"w0", "w2"}),
        frozenset({"w1", "w3"}),
        frozenset({"l0", "l2"}),
        frozenset({"l1", "l3"}),
    }


def test_score_group_gives_way_to_no_repeat_and_floats_minimally() -> None:
    # a and b (2 points) already met: each floats down to the 1-point group rather than repeat.
    ranked = [
        SwissPlayer("a", 2, frozenset({"b"})),
        SwissPlayer("b", 2, frozenset({"a"})),
        SwissPlayer("c", 1),
        SwissPlayer("d", 1),
        SwissPlayer("e", 0),
        SwissPlayer("f", 0),
    ]
    rnd = pair_swiss(ranked)
    pairs = {p.players() for p in rnd.pairings}
    assert frozenset({"a", "b"}) not in pairs
    assert frozenset({"e", "f"}) in pairs  # the 0-point group is untouched
    assert rnd.repeats == 0


def test_repeat_only_when_unavoidable() -> None:
    # Four players who have all met each other: any pairing repeats, and the round still pairs everyone.
    everyone = {"a", "b", "c", "d"}
    ranked = [SwissPlayer(p, 0, frozenset(everyone - {p})) for p in sorted(everyone)]
    rnd = pair_swiss(ranked)
    assert rnd.repeats == 2
    assert frozenset().union(*(p.players() for p in rnd.pairings)) == everyone
    # With one pair still unplayed, the matcher uses it and repeats only once.
    ranked[0] = replace(ranked[0], opponents=frozenset({"b", "c"}))
    ranked[3] = replace(ranked[3], opponents=frozenset({"b", "c"}))
    rnd = pair_swiss(ranked)
    assert rnd.repeats == 1
    assert frozenset({"a", "d"}) in {p.players() for p in rnd.pairings}


def test_seat_zero_to_player_who_had_it_less() -> None:
    rnd = pair_swiss([SwissPlayer("a", 1, seat0=2, seat1=1), SwissPlayer("b", 1, seat0=1, seat1=2)])
    assert (rnd.pairings[0].seat0, rnd.pairings[0].seat1) == ("b", "a")


def test_first_round_dutch_shape() -> None:
    ranked = [SwissPlayer(f"p{i}", 0) for i in range(1, 9)]
    rnd = pair_swiss(ranked)
    assert [(p.seat0, p.seat1) for p in rnd.pairings] == [("p1", "p5"), ("p2", "p6"), ("p3", "p7"), ("p4", "p8")]


def test_rejects_half_point_fractions_and_duplicates() -> None:
    with pytest.raises(ValueError):
        pair_swiss([SwissPlayer("a", 0.25), SwissPlayer("b", 0)])
    with pytest.raises(ValueError):
        pair_swiss([SwissPlayer("a", 0), SwissPlayer("a", 0)])


def test_large_fields_are_paired_group_by_group() -> None:
    """Above DECOMPOSE_ABOVE players each score group is matched on its own, an odd group floating one
    player to the next group down: few floats, all between neighbouring groups, no repeats."""
    from gateway.tournaments.swiss import DECOMPOSE_ABOVE, _by_groups

    rng = random.Random(5)
    n = DECOMPOSE_ABOVE + 172
    players = sorted((SwissPlayer(f"p{i:03d}", float(rng.randint(0, 3))) for i in range(n)), key=lambda p: -p.score)
    score = {p.player: p.score for p in players}
    assert _by_groups(players) is not None  # the group-by-group matching made it, not the global fallback
    rnd = pair_swiss(players)
    assert rnd.repeats == 0 and rnd.bye is None and len(rnd.pairings) == n // 2
    gaps = [abs(score[p.seat0] - score[p.seat1]) for p in rnd.pairings]
    assert set(gaps) <= {0.0, 1.0} and gaps.count(1.0) <= 3


@pytest.mark.parametrize("seed", [1, 2])
def test_no_repeat_pairing_300_players_7_rounds(seed: int) -> None:
    history, _, repeats = play_swiss(300, 7, seed)
    assert repeats == 0
    met = [pair for rnd in history for pair in rnd]
    assert len(met) == len(set(met)) == 7 * 150
