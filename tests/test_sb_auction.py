"""SB-9: the lead auction after a domino, its jockey discount and every balance limit."""

from __future__ import annotations

import pytest

from tests.sb import GAME, H0_DEFAULT, H1_DEFAULT, act, started
from workers.games.engine import Seat, millis
from workers.games.errors import IllegalAction
from workers.games.spectacular_bid.auction import net
from workers.games.spectacular_bid.state import Phase, Round


def auction(points: tuple[int, int] = (150, 150)):  # type: ignore[no-untyped-def]
    """Seat 0 is the jockey (went out last round); seat 1 answers first."""
    state = started(H0_DEFAULT, H1_DEFAULT, points=points, jockey=0)
    assert state.phase is Phase.AUCTION and state.turn == 1
    return state


def legal(state, seat: int) -> list[dict]:  # type: ignore[no-untyped-def]
    return [a.to_json() for a in GAME.legal_actions(state, Seat(seat)) if a.do != "resign"]


def summary(state):  # type: ignore[no-untyped-def]
    return GAME.outcome(state, millis(100))["rounds"][-1]


def test_decline_lets_the_jockey_lead_any_tile_for_free() -> None:
    state = act(auction(), 1, "decline", t=1)
    assert state.phase is Phase.LEAD and state.turn == 0 and state.points == (150, 150)
    leads = {a["tile"] for a in legal(state, 0)}
    assert "0-4" in leads and "4-0" in leads and "5-5" in leads  # any tile, either way round
    state = act(state, 0, "play", tile="0-4", t=2)
    assert summary(state)["auction"] == "declined" and summary(state)["lead_by"] == 0
    assert summary(state)["jockey"] == 0


def test_opponents_bid_accepted_pays_the_whole_bid() -> None:
    state = act(auction(), 1, "bid", amount=15, t=1)
    assert state.turn == 0
    state = act(state, 0, "accept", t=2)
    assert state.points == (165, 135)
    assert state.phase is Phase.LEAD and state.turn == 1
    assert summary(state)["auction"] == {"winner": 1, "bid": 15, "paid": 15}


def test_jockeys_accepted_20_costs_5_and_the_opponent_receives_5() -> None:
    state = act(auction(), 1, "bid", amount=15, t=1)
    state = act(state, 0, "raise", amount=20, t=2)
    state = act(state, 1, "accept", t=3)
    assert state.points == (145, 155)
    assert state.turn == 0
    assert summary(state)["auction"] == {"winner": 0, "bid": 20, "paid": 5}


def test_the_discount_is_the_jockeys_only_and_never_goes_below_zero() -> None:
    round = Round((frozenset(), frozenset()), (), jockey=Seat(0))
    assert net(round, Seat(0), 40) == 25
    assert net(round, Seat(0), 15) == 0
    assert net(round, Seat(0), 10) == 0  # floored, never a refund
    assert net(round, Seat(1), 40) == 40


def test_raises_alternate_and_each_is_at_least_5_more() -> None:
    state = act(auction(), 1, "bid", amount=15, t=1)
    with pytest.raises(IllegalAction, match="at least 20"):
        act(state, 0, "raise", amount=15, t=2)
    with pytest.raises(IllegalAction, match="multiple of 5"):
        act(state, 0, "raise", amount=22, t=2)
    state = act(state, 0, "raise", amount=30, t=2)
    state = act(state, 1, "raise", amount=35, t=3)
    state = act(state, 0, "accept", t=4)
    assert state.points == (185, 115) and state.turn == 1


def test_opening_answers_are_decline_or_a_bid_of_15_or_more() -> None:
    state = auction()
    with pytest.raises(IllegalAction, match="at least 15"):
        act(state, 1, "bid", amount=10, t=1)
    with pytest.raises(IllegalAction, match="no bid"):
        act(state, 1, "accept", t=1)
    with pytest.raises(IllegalAction, match="no bid stands"):
        act(state, 1, "raise", amount=20, t=1)
    with pytest.raises(IllegalAction, match="turn"):
        act(state, 0, "decline", t=1)


def test_decline_is_only_the_opening_answer() -> None:
    state = act(auction(), 1, "bid", amount=15, t=1)
    with pytest.raises(IllegalAction, match="accept it or raise"):
        act(state, 0, "decline", t=2)
    with pytest.raises(IllegalAction, match="stands"):
        act(state, 0, "bid", amount=20, t=2)


def test_a_bid_beyond_the_balance_is_refused() -> None:
    state = auction(points=(150, 150))
    with pytest.raises(IllegalAction, match="more than your 150"):
        act(state, 1, "bid", amount=155, t=1)
    assert {"do": "bid", "amount": 150} in legal(state, 1)
    assert {"do": "bid", "amount": 155} not in legal(state, 1)


def test_the_jockeys_limit_counts_the_discount() -> None:
    state = act(auction(points=(10, 290)), 1, "bid", amount=15, t=1)
    # a raise to 25 costs the jockey 10 (all they have): legal; 30 would cost 15: refused
    with pytest.raises(IllegalAction, match="would cost 15"):
        act(state, 0, "raise", amount=30, t=2)
    assert legal(state, 0) == [{"do": "accept"}, {"do": "raise", "amount": 20}, {"do": "raise", "amount": 25}]


def test_a_payment_of_the_whole_balance_accepted_loses_before_the_lead() -> None:
    state = act(auction(points=(280, 20)), 1, "bid", amount=20, t=1)
    state = act(state, 0, "accept", t=2)
    assert state.points == (300, 0)
    assert state.phase is Phase.OVER and state.winner == 0 and state.reason == "points"
    assert summary(state) == {
        "end": "points",
        "jockey": 0,
        "lead_by": 1,
        "auction": {"winner": 1, "bid": 20, "paid": 20},
    }
    assert state.round is not None and state.round.layout.empty


def test_who_cannot_pay_the_minimum_bid_must_decline() -> None:
    state = auction(points=(290, 10))
    assert legal(state, 1) == [{"do": "decline"}]
    with pytest.raises(IllegalAction):
        act(state, 1, "bid", amount=15, t=1)


def test_who_cannot_pay_the_minimum_raise_can_only_accept() -> None:
    state = act(auction(points=(5, 295)), 1, "bid", amount=20, t=1)
    # the jockey's least raise, 25, would cost 10 > 5
    assert legal(state, 0) == [{"do": "accept"}]
    state = act(auction(points=(155, 145)), 1, "bid", amount=15, t=1)
    state = act(state, 0, "raise", amount=135, t=2)
    # seat 1 (no discount) has 145: a raise to 140 is affordable, 150 is not
    assert legal(state, 1)[-1] == {"do": "raise", "amount": 145}


def test_winning_the_lead_creates_no_points() -> None:
    state = act(auction(), 1, "bid", amount=45, t=1)
    state = act(state, 0, "accept", t=2)
    assert sum(state.points) == 300
