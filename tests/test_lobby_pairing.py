"""The pure pairing (gateway/lobby/pairing.py): every table within its players' allowed gap, the gap
widening with the (injected) time waited, nobody twice or with themselves, 501♠ tables of 3 or 4."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from gateway.lobby.pairing import Waiting, Widening, allowed_gap, fits, pair

W = Widening(base=2.0, per_s=1.0)

players = st.lists(
    st.builds(
        Waiting,
        player_id=st.integers(1, 60),
        ordinal=st.floats(-20, 60, allow_nan=False),
        joined_ms=st.integers(0, 30_000),
    ),
    max_size=40,
)
sizes = st.sampled_from([(2,), (4, 3)])


@settings(max_examples=200, deadline=None)
@given(players, sizes, st.integers(30_000, 90_000))
def test_every_table_is_within_the_gap_of_each_of_its_players(
    waiting: list[Waiting], seats: tuple[int, ...], now: int
) -> None:
    tables = pair(waiting, seats, now, W)
    seated = [w.player_id for t in tables for w in t.players]
    assert len(seated) == len(set(seated)), "nobody twice, nobody with themselves"
    assert set(seated) <= {w.player_id for w in waiting}
    for table in tables:
        assert len(table.players) in seats
        assert table.gap <= allowed_gap(table.players, now, W)
        for w in table.players:
            assert table.gap <= W.allowed(now - w.joined_ms)


@settings(max_examples=100, deadline=None)
@given(players, st.integers(0, 60_000), st.integers(0, 60_000))
def test_the_gap_widens_with_the_time_waited(waiting: list[Waiting], now: int, later: int) -> None:
    if waiting:
        assert allowed_gap(waiting, now + later, W) >= allowed_gap(waiting, now, W)
        if fits(waiting, now, W):
            assert fits(waiting, now + later, W)


def test_two_far_apart_players_wait_until_their_gap_has_widened_enough() -> None:
    a, b = Waiting(1, 0.0, 0), Waiting(2, 10.0, 0)
    assert pair([a, b], (2,), 0, W) == []
    assert pair([a, b], (2,), 7_999, W) == []  # 2 + 7.999 < 10
    (table,) = pair([a, b], (2,), 8_000, W)
    assert {w.player_id for w in table.players} == {1, 2} and table.gap == 10.0


def test_the_newcomer_s_gap_counts() -> None:
    old, new = Waiting(1, 0.0, 0), Waiting(2, 10.0, 60_000)
    assert pair([old, new], (2,), 60_000, W) == [], "the newcomer has not waited for a gap of 10"


def test_close_ratings_pair_before_far_ones() -> None:
    ws = [Waiting(1, 0.0, 0), Waiting(2, 1.0, 0), Waiting(3, 30.0, 0), Waiting(4, 31.0, 0)]
    tables = pair(ws, (2,), 1_000, W)
    assert sorted(sorted(w.player_id for w in t.players) for t in tables) == [[1, 2], [3, 4]]


def test_501_seats_four_when_four_fit_and_three_otherwise() -> None:
    four = [Waiting(i, float(i) / 10, 0) for i in range(1, 5)]
    (table,) = pair(four, (4, 3), 0, W)
    assert len(table.players) == 4
    three = [*four[:3], Waiting(9, 50.0, 0)]
    (table,) = pair(three, (4, 3), 0, W)
    assert sorted(w.player_id for w in table.players) == [1, 2, 3]
    assert pair(four[:2], (4, 3), 0, W) == []


def test_a_player_listed_twice_is_seated_once() -> None:
    twice = [Waiting(1, 0.0, 0), Waiting(1, 0.0, 5), Waiting(2, 0.0, 0)]
    (table,) = pair(twice, (2,), 10, W)
    assert sorted(w.player_id for w in table.players) == [1, 2]
    assert pair([Waiting(1, 0.0, 0), Waiting(1, 0.0, 0)], (2,), 10, W) == []


@settings(max_examples=100, deadline=None)
@given(st.floats(-50, 50, allow_nan=False), st.floats(-50, 50, allow_nan=False), st.integers(0, 60_000))
def test_two_players_alone_are_paired_once_they_have_waited_for_their_gap(a: float, b: float, joined: int) -> None:
    pair_of = [Waiting(1, a, 0), Waiting(2, b, joined)]
    needed_ms = joined + max(0.0, abs(a - b) - W.base) / W.per_s * 1000
    assert len(pair(pair_of, (2,), int(needed_ms) + 1, W)) == 1
    if abs(a - b) > W.base + 0.01:
        assert pair(pair_of, (2,), joined, W) == [], "not before the newcomer's gap allows it"
