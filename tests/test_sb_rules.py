"""Spectacular Bid rules through the engine: transfers (SB-1), forced lead (SB-3), turns and draws
(SB-6), domino (SB-7), block (SB-8), resignation and void (SB-12, SB-13)."""

from __future__ import annotations

import pytest

from tests.sb import GAME, act, dealt, events, new, started, tiles
from workers.games.engine import CHANCE, Seat, millis
from workers.games.errors import IllegalAction
from workers.games.spectacular_bid.actions import Deal, parse_action
from workers.games.spectacular_bid.state import Phase, State
from workers.games.spectacular_bid.tiles import round_to_five

# Seat 0 holds the highest double dealt (5-5; 6-6 stays in the boneyard) and leads it.
H0 = "5-5 5-2 6-1 0-1 0-2 0-3 0-4"
H1 = "5-3 5-6 4-4 3-3 2-2 1-1 1-2"


def short(hand0: str, hand1: str, boneyard: str = "") -> State:
    """Clocks running on a deal with a short boneyard, to reach a block or a domino in few plays."""
    deal = Deal((tiles(hand0), tiles(hand1)), tiles(boneyard))
    state, _ = GAME.apply(new(), CHANCE, deal, millis(0))
    return act(act(state, 0, "ready"), 1, "ready")


def test_sb1_fifteen_from_level_balances_gives_165_135() -> None:
    # 6-6 led (12: nothing); 6-3 at E: the spinner 12 + 3 = 15 → seat 1 gains 15
    state = started("6-6 0-1 0-2 0-4 1-2 1-4 2-4", "6-3 0-0 1-1 2-2 3-3 4-4 5-5")
    state = act(state, 0, "play", tile="6-6")
    assert state.points == (150, 150)
    state = act(state, 1, "play", tile="6-3", end="E")
    assert state.points == (135, 165)


def test_sb5_sums_that_are_not_multiples_of_five_transfer_nothing() -> None:
    state = started("5-5 2-2 6-1 0-1 0-2 0-3 0-4", "5-0 5-6 4-4 3-3 1-1 1-2 2-3")
    state = act(state, 0, "play", tile="5-5")  # 10
    assert state.points == (160, 140)
    state = act(state, 1, "play", tile="5-6", end="E")  # 10 + 6 = 16
    state = act(state, 0, "play", tile="6-1", end="E")  # 10 + 1 = 11
    state = act(state, 1, "play", tile="5-0", end="W")  # 0 + 1 = 1
    assert state.points == (160, 140)


def test_sb1_transfer_capped_by_the_payers_balance_and_zero_loses_at_once() -> None:
    # seat 1 has 5 points: the 5-5 lead counts 10 but moves only 5, and seat 1 loses mid-round
    state = started("5-5 0-1 0-2 0-4 1-2 1-4 2-4", "6-3 0-0 1-1 2-2 3-3 4-4 6-2", points=(295, 5))
    state, happened = events(state, 0, "play", tile="5-5")
    assert state.points == (300, 0)
    assert state.phase is Phase.OVER and state.winner == 0 and state.reason == "points"
    assert happened[0]["scored"] == 5
    assert GAME.outcome(state, millis(0))["rounds"][0]["end"] == "points"


def test_sb3_highest_double_must_lead() -> None:
    state = started("6-1 4-4 0-2 0-3 0-4 1-2 1-3", "6-6 5-5 0-0 1-1 2-2 3-3 2-3")
    assert state.turn == 1
    legal = GAME.legal_actions(state, Seat(1))
    assert [a.to_json() for a in legal if a.do == "play"] == [{"do": "play", "tile": "6-6"}]
    with pytest.raises(IllegalAction, match="must lead 6-6"):
        act(state, 1, "play", tile="5-5")
    with pytest.raises(IllegalAction, match="turn"):
        act(state, 0, "play", tile="4-4")


def test_sb3_without_doubles_the_highest_sum_leads() -> None:
    # every double is in the boneyard: 6-5 (11) beats 6-4 (10)
    state = started("6-4 0-1 0-2 0-3 0-4 1-2 1-3", "6-5 0-5 1-4 2-4 1-5 2-3 2-5")
    assert state.round is not None and str(state.round.forced) == "6-5"
    assert state.turn == 1


def test_sb3_tie_of_sums_goes_to_the_larger_half() -> None:
    # 6-3 and 5-4 both sum 9: 6-3 leads
    state = started("6-3 0-1 0-2 0-3 0-4 1-2 1-3", "5-4 0-5 1-4 2-4 1-5 2-3 2-5")
    assert state.round is not None and str(state.round.forced) == "6-3"
    assert state.turn == 0


def test_sb6_who_can_play_must_play_and_may_not_draw() -> None:
    state = act(started(H0, H1), 0, "play", tile="5-5")
    with pytest.raises(IllegalAction, match="may not draw"):
        act(state, 1, "draw")


def test_sb6_draw_until_playable_then_place_that_tile_at_once() -> None:
    # seat 1 has no 6; the boneyard starts 0-5 (no), 1-3 (no), 6-2 (plays)
    state = started("6-6 1-1 1-2 1-4 1-5 2-2 2-4", "0-0 0-1 0-2 0-3 0-4 3-3 3-4", boneyard="0-5 1-3 6-2")
    state = act(state, 0, "play", tile="6-6", t=1)
    state = act(state, 1, "draw", t=2)
    state = act(state, 1, "draw", t=3)
    with pytest.raises(IllegalAction):
        act(state, 1, "play", tile="0-1", end="E")
    state = act(state, 1, "draw", t=4)
    assert state.round is not None and str(state.round.drawn) == "6-2"
    with pytest.raises(IllegalAction, match="place it"):
        act(state, 1, "draw", t=5)
    assert [a.to_json() for a in GAME.legal_actions(state, Seat(1)) if a.do != "resign"] == [
        {"do": "play", "tile": "6-2", "end": "W"},
        {"do": "play", "tile": "6-2", "end": "E"},
    ]
    state = act(state, 1, "play", tile="6-2", end="W", t=5)
    assert state.turn == 0 and state.round is not None and state.round.drawn is None
    assert len(state.round.hands[1]) == 7 + 3 - 1


def test_sb6_forced_passes_are_automatic_and_two_in_succession_block() -> None:
    # 6-6 led; seat 1 has no 6 and draws the two boneyard tiles (neither plays): forced pass;
    # seat 0 has no 6 left either and passes automatically: blocked (SB-8).
    state = short("6-6 0-0 0-1 0-2 1-1 1-2 2-2", "3-3 3-4 4-4 3-5 4-5 5-5 0-3", boneyard="1-3 2-3")
    state = act(state, 0, "play", tile="6-6", t=1)
    state = act(state, 1, "draw", t=2)
    assert state.turn == 1 and state.phase is Phase.PLAY
    state, happened = events(state, 1, "draw", t=3)
    assert [e["kind"] for e in happened] == ["draw", "pass", "pass"]
    assert [e.get("seat") for e in happened[1:]] == [1, 0]
    # hand sums 12 and 60: seat 0 receives 60 (already a multiple of 5)
    assert state.phase is Phase.DEAL and state.past[-1].end == "block"
    assert state.points == (210, 90)
    assert GAME.needs_deal(state)


def _blocked(hand0: str, hand1: str) -> tuple[int, int]:
    """Seat 0 leads 6-6; nobody holds another 6 and nothing is left to draw: blocked at once."""
    state = short(hand0, hand1)
    assert state.turn == 0
    state = act(state, 0, "play", tile="6-6")
    assert state.phase is Phase.DEAL and state.past[-1].end == "block"
    return state.points


def test_sb8_hands_4_and_18_the_4_receives_20() -> None:
    assert _blocked("6-6 0-0 0-1 0-3", "5-5 4-4") == (170, 130)


def test_sb8_an_opponents_17_rounds_to_15() -> None:
    assert _blocked("6-6 0-0 0-1 0-3", "5-5 3-4") == (165, 135)


def test_sb8_equal_sums_pay_nothing() -> None:
    assert _blocked("6-6 0-0 1-2 0-3", "2-4") == (150, 150)


def test_round_to_five() -> None:
    assert [round_to_five(n) for n in (0, 2, 3, 4, 17, 18, 60)] == [0, 0, 5, 5, 15, 20, 60]


def test_sb8_after_a_block_the_next_lead_is_forced_and_there_is_no_auction() -> None:
    state = short("6-6 0-0 0-1 0-3", "5-5 4-4")
    state = act(state, 0, "play", tile="6-6")
    state, _ = GAME.apply(state, CHANCE, Deal((tiles("1-1 0-2"), tiles("2-2 0-4")), ()), millis(1))
    assert state.round is not None and state.round.jockey is None and str(state.round.forced) == "2-2"
    state = act(act(state, 0, "ready", t=2), 1, "ready", t=2)
    assert state.phase is Phase.LEAD and state.turn == 1


def test_sb7_domino_ends_the_round_and_its_player_is_the_next_jockey() -> None:
    state = short("6-6 6-5 5-5", "6-1 1-1 1-2 2-2")
    state = act(state, 0, "play", tile="6-6")  # 12
    state = act(state, 1, "play", tile="6-1", end="E")  # 12 + 1
    state = act(state, 0, "play", tile="6-5", end="W")  # 5 + 1
    state = act(state, 1, "play", tile="1-1", end="E")  # 5 + 2
    state, happened = events(state, 0, "play", tile="5-5", end="W")  # 10 + 2, last tile
    assert [e["kind"] for e in happened] == ["play", "domino"]
    assert state.points == (150, 150)  # no bonus for the opponent's tiles
    assert state.past[-1].end == "domino" and state.past[-1].domino_by == 0
    state, _ = GAME.apply(state, CHANCE, Deal((tiles("1-3 0-2"), tiles("2-3 0-4")), ()), millis(1))
    assert state.round is not None and state.round.jockey == 0 and state.round.forced is None
    state = act(act(state, 0, "ready", t=2), 1, "ready", t=2)
    assert state.phase is Phase.AUCTION and state.turn == 1  # the jockey's opponent answers first


def test_sb7_domino_is_counted_before_the_round_ends() -> None:
    # the last tile scores: 5-5 at W with E showing 0 → 10 + 0 = 10 for seat 0
    state = short("6-6 6-5 5-5", "6-0 0-1 1-2 2-2")
    state = act(state, 0, "play", tile="6-6")
    state = act(state, 1, "play", tile="6-0", end="E")  # 12 + 0 = 12
    state = act(state, 0, "play", tile="6-5", end="W")  # 5 + 0 = 5 → +5
    assert state.points == (155, 145)
    state = act(state, 1, "play", tile="0-1", end="E")  # 5 + 1 = 6
    state = act(state, 0, "play", tile="5-5", end="W")  # 10 + 1 = 11: nothing, domino
    assert state.points == (155, 145) and state.past[-1].end == "domino"


def test_resign_at_any_time_the_opponent_wins() -> None:
    state = dealt(H0, H1)
    state = act(state, 1, "resign", t=3)
    assert state.phase is Phase.OVER and state.winner == 0 and state.reason == "resign"
    assert state.reason in GAME.endings
    with pytest.raises(IllegalAction, match="over"):
        act(state, 0, "ready", t=4)


def test_void_ends_with_no_result_and_keeps_the_reason() -> None:
    state = started(H0, H1)
    state, _ = GAME.void(state, "worker_down", millis(5))
    outcome = GAME.outcome(state, millis(5))
    assert outcome["status"] == "voided" and outcome["winner"] is None and outcome["reason"] is None
    assert outcome["void_reason"] == "worker_down"
    with pytest.raises(IllegalAction, match="voided"):
        act(state, 0, "play", tile="5-5", t=6)


def test_illegal_actions_leave_the_state_untouched() -> None:
    state = started(H0, H1)
    before = state
    for seat, action in [
        (1, {"do": "play", "tile": "5-3"}),  # not their turn
        (0, {"do": "play", "tile": "5-2"}),  # not the forced lead
        (0, {"do": "play", "tile": "5-5", "end": "W"}),  # a lead names no end
        (0, {"do": "draw"}),
        (0, {"do": "bid", "amount": 15}),
        (0, {"do": "ready"}),
    ]:
        with pytest.raises(IllegalAction):
            GAME.apply(state, Seat(seat), parse_action(action), millis(1))
    assert state == before
    assert act(state, 0, "play", tile="5-5", t=1).points == (160, 140)


def test_a_play_must_name_an_end_that_fits() -> None:
    state = act(started(H0, H1), 0, "play", tile="5-5")
    with pytest.raises(IllegalAction, match="name the end"):
        act(state, 1, "play", tile="5-3")
    with pytest.raises(IllegalAction, match="not open"):
        act(state, 1, "play", tile="5-3", end="N")
    with pytest.raises(IllegalAction, match="do not hold"):
        act(state, 1, "play", tile="5-0", end="E")
    state = act(state, 1, "play", tile="5-3", end="E")
    with pytest.raises(IllegalAction, match="does not fit the E end, which shows 3"):
        act(state, 0, "play", tile="5-2", end="E")


def test_a_lead_faces_its_first_number_west() -> None:
    state = started("6-4 0-1 0-2 0-3 1-2 1-3 2-3", "5-4 0-5 1-4 2-4 1-5 2-5 3-4")
    assert state.round is not None and str(state.round.forced) == "6-4"
    state = act(state, 0, "play", tile="4-6")
    assert state.round is not None
    assert dict((e.value, p) for e, p in state.round.layout.open_ends()) == {"W": 4, "E": 6}
