"""F-6 tricks and F-7 marriages."""

from __future__ import annotations

import pytest

from tests.f501 import GAME, act, dealt, legal_codes, load, position, run
from workers.games.engine import Seat
from workers.games.errors import IllegalAction
from workers.games.five_oh_one.cards import Suit
from workers.games.five_oh_one.state import Tricks

HANDS = {0: "AH 9H AD", 1: "KH JH AS", 2: "QD KD 9S"}


def test_follow_suit() -> None:
    state = position(HANDS, played="AH")
    assert legal_codes(state, 1) == {"KH", "JH"}
    with pytest.raises(IllegalAction, match="follow suit: you must play a heart"):
        act(state, 1, "play", card="AS")


def test_no_need_to_beat() -> None:
    """JH led: seat 1 may play the 9H under it though the KH would win."""
    state = position({0: "JH AD", 1: "KH 9H", 2: "QD KD"}, played="JH")
    after = act(state, 1, "play", card="9H")
    assert isinstance(after.hand, Tricks) and after.hand.turn == 2


def test_void_must_trump_even_when_it_cannot_win() -> None:
    """Seat 1 trumped with the AS; seat 2, void in hearts, must still play its 9S (F-6)."""
    state = position({0: "AH", 1: "AS", 2: "QD KD 9S"}, played="AH AS")
    assert legal_codes(state, 2) == {"9S"}
    with pytest.raises(IllegalAction, match="must play a trump"):
        act(state, 2, "play", card="KD")
    after = act(state, 2, "play", card="9S")
    assert isinstance(after.hand, Tricks)
    assert after.hand.done[-1].winner == 1  # the AS wins, the 9S could not


def test_void_of_suit_and_trump_plays_anything() -> None:
    state = position({0: "AH", 1: "QD KC", 2: "KD"}, played="AH")
    assert legal_codes(state, 1) == {"QD", "KC"}
    after = act(state, 1, "play", card="KC")
    assert isinstance(after.hand, Tricks) and after.hand.trick[-1][1].code == "KC"


def test_no_trump_void_plays_anything() -> None:
    state = position({0: "AH", 1: "QS KC", 2: "KD"}, trump="NT", played="AH")
    assert legal_codes(state, 1) == {"QS", "KC"}


def test_leading_is_free() -> None:
    state = position({0: "AH 9S QD KD", 1: "KH", 2: "QH"})
    assert legal_codes(state, 0) == {"AH", "9S", "QD", "KD", "KD+", "QD+"}


def test_highest_trump_else_highest_of_suit_led_wins() -> None:
    state = position({0: "QD", 1: "AH", 2: "KD"}, trump="S", played="")
    state = act(act(act(state, 0, "play", card="QD"), 1, "play", card="AH"), 2, "play", card="KD")
    assert isinstance(state.hand, Tricks)
    assert state.hand.done[-1].winner == 2 and state.hand.turn == 2  # the winner leads
    state = position({0: "QD", 1: "9S", 2: "AD"})
    state = act(act(act(state, 0, "play", card="QD"), 1, "play", card="9S"), 2, "play", card="AD")
    assert isinstance(state.hand, Tricks) and state.hand.done[-1].winner == 1


def test_out_of_turn_and_missing_card_refused() -> None:
    state = position(HANDS)
    with pytest.raises(IllegalAction, match="not your turn"):
        act(state, 1, "play", card="KH")
    with pytest.raises(IllegalAction, match="not in your hand"):
        act(state, 0, "play", card="KH")


def test_first_lead_is_the_dealers_left_neighbour_not_the_declarer() -> None:
    state = dealt()
    state = act(act(act(state, 0, "pass"), 1, "bid", amount=70), 2, "pass")
    state = act(state, 1, "declare", trump="S", target=70, give={"0": "QC", "2": "TD"})
    assert isinstance(state.hand, Tricks) and state.hand.turn == 0
    assert all(len(h) == 8 for h in state.hand.hands)


# F-7 marriages


def test_marriage_values_trump_40_other_20_no_trump_all_20() -> None:
    hands = {0: "KS QS KH QH", 1: "9D", 2: "9C"}
    for trump, lead, value in (("S", "KS", 40), ("S", "QH", 20), ("NT", "KS", 20), ("H", "QH", 40)):
        state = act(position(hands, trump=trump), 0, "play", card=lead, marriage=True)
        assert isinstance(state.hand, Tricks)
        assert [(m.suit.value, m.value) for m in state.hand.marriages] == [(lead[1], value)]


def test_first_trick_marriage_invalid_when_the_announcer_wins_no_trick() -> None:
    out = run(load("501-marriage-no-trick.json"))
    assert out["hands"][0]["points"][0] == 0  # the 20 of the KH–QH is not counted
    assert out["scores"][0] == 501


def test_first_trick_marriage_valid_when_a_later_trick_is_won() -> None:
    """F-10: A leads the KH announcing, loses that trick to the TH, wins later: 68 + 20 = 88."""
    record = load("examples/501-seed-example.json")
    assert run(record)["hands"][0]["points"][0] == 88
    record["events"][4] = {"seat": 0, "do": "play", "card": "KH"}  # the same play, unannounced
    assert run(record)["hands"][0]["points"][0] == 68


def test_marriage_only_when_leading_and_holding_both() -> None:
    with pytest.raises(IllegalAction, match="only when leading"):
        act(position({0: "AH", 1: "KH QH", 2: "9H"}, played="AH"), 1, "play", card="KH", marriage=True)
    with pytest.raises(IllegalAction, match="you do not hold the QH"):
        act(position({0: "KH AD", 1: "9D", 2: "9C"}), 0, "play", card="KH", marriage=True)
    with pytest.raises(IllegalAction, match="K or Q"):
        act(position({0: "AH KH QH", 1: "9D", 2: "9C"}), 0, "play", card="AH", marriage=True)


def test_no_marriage_after_a_member_was_played() -> None:
    out = run(load("501-marriage-member-played.json"))
    assert out["error"] == "no marriage: the KH was already played (F-7)"


def test_marriage_never_changes_trump() -> None:
    """After A's heart marriage, spades stay trump: Clara's KS still takes the diamond trick."""
    record = load("examples/501-seed-example.json")
    state = dealt()
    for event in record["events"][:16]:
        state = act(state, event["seat"], event["do"], **{k: v for k, v in event.items() if k not in ("seat", "do")})
    assert isinstance(state.hand, Tricks)
    assert state.hand.terms.trump is Suit.S
    assert state.hand.done[3].winner == 2
    assert GAME.view(state, None).to_json()["trump"] == "S"
    assert GAME.view(state, Seat(0)).to_json()["marriages"] == [{"seat": 0, "suit": "H", "value": 20}]


def test_plays_are_listed_in_deck_order_whatever_the_set_order() -> None:
    """A hand is a set; its plays (a view's `legal`, a seeded bot's choice) come in the deck's order, so the
    same match lists them alike in every process (a set of cards hashed by identity does not)."""
    state = position({0: "9S QS AH TD KC JH QH 9C", 1: "AS", 2: "KD"})
    assert isinstance(state.hand, Tricks)
    plays = GAME.legal_actions(state, Seat(0))
    order = [play.card.index for play in plays if not play.marriage]
    assert order == sorted(order) and len(order) == 8
