"""F-3 bidding, F-4 blind, F-5 abandon and declare, F-1 four players, F-9 the end."""

from __future__ import annotations

import pytest

from tests.f501 import F10_HANDS, GAME, act, dealt, events, load, run
from workers.games.engine import Seat
from workers.games.errors import IllegalAction
from workers.games.five_oh_one.actions import Bid
from workers.games.five_oh_one.state import Bidding, Contract, Tricks


@pytest.mark.parametrize(("amount", "message"), [(65, "at least 66"), (221, "at most 220"), (0, "at least 66")])
def test_bids_out_of_range_refused(amount: int, message: str) -> None:
    state = dealt()
    with pytest.raises(IllegalAction, match=message):
        act(state, 0, "bid", amount=amount)
    assert act(state, 0, "bid", amount=66) != state
    assert act(state, 0, "bid", amount=220) != state


def test_bid_must_rise_strictly() -> None:
    state = act(dealt(), 0, "bid", amount=80)
    with pytest.raises(IllegalAction, match="higher than the standing 80"):
        act(state, 1, "bid", amount=80)
    state = act(state, 1, "bid", amount=81)
    legal = GAME.legal_actions(state, Seat(2))
    assert min(a.amount for a in legal if isinstance(a, Bid)) == 82


def test_bidding_starts_left_of_the_dealer_and_keeps_turns() -> None:
    state = dealt(dealer=1)
    assert isinstance(state.hand, Bidding) and state.hand.turn == 2
    with pytest.raises(IllegalAction, match="not your turn"):
        act(state, 0, "bid", amount=70)


def test_pass_is_final() -> None:
    state = act(act(act(dealt(), 0, "bid", amount=80), 1, "pass"), 2, "bid", amount=90)
    assert isinstance(state.hand, Bidding) and state.hand.turn == 0  # seat 1 is skipped
    with pytest.raises(IllegalAction, match="passing is final"):
        act(state, 1, "bid", amount=100)
    state = act(state, 0, "pass")
    assert isinstance(state.hand, Contract) and state.hand.declarer == 2 and state.hand.bid == 90


def test_bidding_ends_when_one_bid_stands_and_all_others_passed() -> None:
    state = act(act(dealt(), 0, "pass"), 1, "pass")
    state = act(state, 2, "bid", amount=66)
    assert isinstance(state.hand, Contract) and state.hand.declarer == 2
    assert len(state.hand.hands[2]) == 10  # the exposed talon joined the declarer's hand


def test_all_pass_scores_zero_and_rotates_the_dealer() -> None:
    state, happened = events(act(act(dealt(), 0, "pass"), 1, "pass"), 2, "pass")
    assert state.hand is None and GAME.needs_deal(state)
    assert state.dealer == 0 and state.scores == (501, 501, 501)
    assert [e.kind for e in happened][-2:] == ["all_passed", "hand"]
    out = run(load("501-all-pass-redeal.json"))
    assert [h["dealer"] for h in out["hands"]] == [2, 0]
    assert out["hands"][0]["declarer"] is None and out["hands"][0]["deltas"] == [0, 0, 0]


def test_blind_double_lost_by_looking_before_the_end_of_bidding() -> None:
    state = act(dealt(), 0, "bid", amount=80)
    state = act(state, 0, "look")  # after one's own bid, still before the end
    state = act(act(state, 1, "pass"), 2, "pass")
    assert isinstance(state.hand, Contract) and state.hand.blind is False
    assert act(state, 0, "abandon").scores == (581, 476, 476)


def test_blind_double_kept_when_looking_only_after_the_bidding() -> None:
    state = act(act(act(dealt(), 0, "bid", amount=80), 1, "look"), 1, "pass")  # others looking is fine
    state = act(state, 2, "pass")
    assert isinstance(state.hand, Contract) and state.hand.blind is True
    with pytest.raises(IllegalAction, match="already face up"):
        act(state, 0, "look")
    assert run(load("examples/501-seed-example.json"))["hands"][0]["deltas"][0] == 200  # 2 × 100


def test_look_twice_refused() -> None:
    state = act(dealt(), 2, "look")
    with pytest.raises(IllegalAction, match="already looked"):
        act(state, 2, "look")


def test_abandon_scoring_blind_and_not() -> None:
    blind = act(act(act(act(dealt(), 0, "bid", amount=80), 1, "pass"), 2, "pass"), 0, "abandon")
    assert blind.scores == (661, 476, 476)
    looked = act(act(act(act(act(dealt(), 0, "look"), 0, "bid", amount=80), 1, "pass"), 2, "pass"), 0, "abandon")
    assert looked.scores == (581, 476, 476)
    assert looked.results[-1].abandoned and looked.hand is None and looked.dealer == 0


def test_only_the_declarer_declares() -> None:
    state = act(act(act(dealt(), 0, "bid", amount=80), 1, "pass"), 2, "pass")
    with pytest.raises(IllegalAction, match="only they declare"):
        act(state, 1, "abandon")
    with pytest.raises(IllegalAction, match="each opponent"):
        act(state, 0, "declare", trump="S", target=80, give={"1": "TH"})
    with pytest.raises(IllegalAction, match="different card"):
        act(state, 0, "declare", trump="S", target=80, give={"1": "TH", "2": "TH"})
    with pytest.raises(IllegalAction, match="to 220"):
        act(state, 0, "declare", trump="S", target=221, give={"1": "TH", "2": "KS"})
    after = act(state, 0, "declare", trump="NT", target=220, give={"1": "TH", "2": "KS"})
    assert isinstance(after.hand, Tricks) and after.hand.terms.trump is None


def test_four_players_dealer_sits_out() -> None:
    state = dealt((*F10_HANDS, ""), dealer=3)
    assert isinstance(state.hand, Bidding) and state.hand.turn == 0
    with pytest.raises(IllegalAction, match="sit this hand out"):
        act(state, 3, "look")
    assert GAME.legal_actions(state, Seat(3)) == ()
    out = run(load("501-four-players.json"))
    assert out["scores"] == [701, 469, 481, 501]
    assert out["hands"][0]["points"][3] == 0 and out["hands"][0]["deltas"][3] == 0


def test_four_players_abandon_spares_the_sitting_out_dealer() -> None:
    state = dealt(("", *F10_HANDS), dealer=0)
    state = act(act(act(act(state, 1, "bid", amount=70), 2, "pass"), 3, "pass"), 1, "abandon")
    assert state.scores == (501, 641, 476, 476)
    assert state.dealer == 1  # rotates left, to the seat that now sits out


def test_simultaneous_end_shares_the_win() -> None:
    out = run(load("501-shared-tie.json"))
    assert out["status"] == "finished" and out["scores"] == [152, -5, -5] and out["winners"] == [1, 2]
    state = act(act(act(act(dealt(start_score=20), 0, "bid", amount=66), 1, "pass"), 2, "pass"), 0, "abandon")
    assert GAME.is_over(state) and not GAME.needs_deal(state)
    with pytest.raises(IllegalAction, match="game is over"):
        act(state, 1, "look")


def test_reaching_exactly_zero_ends_the_game() -> None:
    out = run(load("501-end-at-zero.json"))
    assert out["status"] == "finished" and out["winners"] == [1] and out["scores"][1] == 0
