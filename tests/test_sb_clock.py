"""SB-10: the match clock, on the clock value and through the engine. Time is always an input."""

from __future__ import annotations

import pytest

from tests.sb import GAME, H0_DEFAULT, H1_DEFAULT, act, dealt, started
from workers.games.clock import Clock, ClockSettings
from workers.games.engine import Millis, Seat, millis
from workers.games.errors import IllegalAction
from workers.games.spectacular_bid.state import Phase

SETTINGS = ClockSettings(Millis(120_000), Millis(10_000))


def test_clock_value_decide_in_8s_keeps_the_bank_and_in_13s_costs_3s() -> None:
    clock = Clock.fresh(SETTINGS, 2).start(Seat(0), Millis(0))
    assert clock.stop(Millis(8_000)).banks == (120_000, 120_000)
    assert clock.stop(Millis(13_000)).banks == (117_000, 120_000)
    assert clock.deadline() == 130_000
    assert clock.bank_at(Seat(0), Millis(15_500)) == 114_500
    assert clock.delay_left(Millis(4_000)) == 6_000


def test_clock_value_start_ends_the_running_decision_and_a_flag_empties_the_bank() -> None:
    clock = Clock.fresh(SETTINGS, 2).start(Seat(0), Millis(0)).start(Seat(1), Millis(12_000))
    assert clock.banks == (118_000, 120_000) and clock.turn == 1
    flagged = clock.flag()
    assert flagged.banks == (118_000, 0) and not flagged.running


def decided_after(seconds: float) -> tuple[int, int]:
    state = started(H0_DEFAULT, H1_DEFAULT, at=0)
    state = act(state, 0, "play", tile="5-5", t=seconds)
    return state.clock.banks


def test_sb10_decide_in_8_seconds_bank_untouched() -> None:
    assert decided_after(8) == (120_000, 120_000)


def test_sb10_decide_in_13_seconds_bank_minus_3() -> None:
    assert decided_after(13) == (117_000, 120_000)


def test_draws_inside_one_turn_keep_the_delay() -> None:
    # seat 1 has no 6 and draws twice (at 4 s and 9 s after their turn began) then plays at 14 s
    state = started("6-6 1-1 1-2 1-4 1-5 2-2 2-4", "0-0 0-1 0-2 0-3 0-4 3-3 3-4", boneyard="0-5 6-2")
    state = act(state, 0, "play", tile="6-6", t=1)
    state = act(state, 1, "draw", t=5)
    state = act(state, 1, "draw", t=10)
    assert state.clock.turn == 1 and state.clock.since == 1_000
    state = act(state, 1, "play", tile="6-2", end="E", t=15)
    assert state.clock.banks == (120_000, 116_000)


def test_a_draw_that_forces_the_pass_ends_the_decision_and_is_charged() -> None:
    from tests.test_sb_rules import short

    state = short("6-6 6-1 1-2 1-4 1-5 2-2 2-4", "0-0 0-1 0-2 0-3 0-4 3-3 3-4", boneyard="0-5")
    state = act(state, 0, "play", tile="6-6", t=1)
    state = act(state, 1, "draw", t=16)  # 0-5 does not play and the boneyard is empty: pass
    assert state.clock.banks == (120_000, 115_000)
    assert state.clock.turn == 0 and state.clock.since == 16_000  # a new decision for seat 0


def test_a_raise_hands_the_clock_over_and_accept_starts_the_leaders() -> None:
    state = started(H0_DEFAULT, H1_DEFAULT, jockey=0)
    state = act(state, 1, "bid", amount=15, t=12)  # seat 1 took 12 s: −2
    assert state.clock.turn == 0 and state.clock.since == 12_000
    state = act(state, 0, "raise", amount=20, t=23)  # seat 0 took 11 s: −1
    assert state.clock.turn == 1 and state.clock.since == 23_000
    state = act(state, 1, "accept", t=24)
    assert state.clock.turn == 0 and state.clock.since == 24_000  # the leader, fresh delay
    assert state.clock.banks == (119_000, 118_000)


def test_decline_starts_the_jockeys_clock() -> None:
    state = act(started(H0_DEFAULT, H1_DEFAULT, jockey=0), 1, "decline", t=3)
    assert state.clock.turn == 0 and state.clock.since == 3_000


def test_an_arrival_exactly_at_the_deadline_has_already_lost() -> None:
    state = started(H0_DEFAULT, H1_DEFAULT, at=0)
    deadline = GAME.next_deadline(state)
    assert deadline == 130_000
    with pytest.raises(IllegalAction, match="too late"):
        act(state, 0, "play", tile="5-5", t=130)
    assert act(state, 0, "play", tile="5-5", t=129.999).clock.banks == (1, 120_000)
    flagged, happened = GAME.on_deadline(state, millis(130))
    assert flagged.phase is Phase.OVER and flagged.winner == 1 and flagged.reason == "time"
    assert [e.kind for e in happened] == ["flag"]
    assert GAME.outcome(flagged, millis(200))["bank_s"] == [0.0, 120.0]


def test_on_deadline_settles_at_the_deadline_instant_even_when_called_late() -> None:
    state = started(H0_DEFAULT, H1_DEFAULT, at=0)
    flagged, _ = GAME.on_deadline(state, millis(500))
    assert flagged.clock.since == 130_000 and flagged.clock.banks == (0, 120_000)


def test_clocks_stop_until_both_press_continue() -> None:
    state = dealt(H0_DEFAULT, H1_DEFAULT, at=0)
    assert not state.clock.running and GAME.next_deadline(state) == 60_000
    with pytest.raises(IllegalAction, match="clocks have not started"):
        act(state, 0, "play", tile="5-5", t=1)
    state = act(state, 1, "ready", t=2.5)
    assert not state.clock.running
    with pytest.raises(IllegalAction, match="already pressed"):
        act(state, 1, "ready", t=3)
    state = act(state, 0, "ready", t=4)
    assert state.clock.turn == 0 and state.clock.since == 4_000


def test_the_ready_timeout_starts_the_clocks_60s_after_the_deal() -> None:
    state = dealt(H0_DEFAULT, H1_DEFAULT, at=0)
    state = act(state, 1, "ready", t=10)
    with pytest.raises(IllegalAction, match="too late"):
        act(state, 0, "ready", t=60)
    state, happened = GAME.on_deadline(state, millis(75))
    assert [e.kind for e in happened] == ["clocks_started"]
    assert state.clock.turn == 0 and state.clock.since == 60_000
    with pytest.raises(IllegalAction, match="already running"):
        act(state, 0, "ready", t=75)
    # the delay ran from 60 s: a lead at 75 s costs 5 s of bank
    assert act(state, 0, "play", tile="5-5", t=75).clock.banks == (115_000, 120_000)


def test_the_ready_timeout_is_an_option() -> None:
    state = dealt(H0_DEFAULT, H1_DEFAULT, at=0, ready_timeout_s=5)
    assert GAME.next_deadline(state) == 5_000


def test_clocks_stop_between_rounds_and_banks_are_never_refilled() -> None:
    from tests.test_sb_rules import short

    state = short("6-6 6-5 5-5", "6-1 1-1 1-2 2-2")
    state = act(state, 0, "play", tile="6-6", t=20)  # −10
    state = act(state, 1, "play", tile="6-1", end="E", t=21)
    state = act(state, 0, "play", tile="6-5", end="W", t=22)
    state = act(state, 1, "play", tile="1-1", end="E", t=23)
    state = act(state, 0, "play", tile="5-5", end="W", t=24)  # domino
    assert state.phase is Phase.DEAL and not state.clock.running
    assert state.clock.banks == (110_000, 120_000)
    assert GAME.outcome(state, millis(500))["bank_s"] == [110.0, 120.0]


def test_shared_device_the_clock_waits_for_each_hand_over() -> None:
    state = started(H0_DEFAULT, H1_DEFAULT, shared_device=True)
    assert state.hand_over and not state.clock.running and state.turn == 0
    assert GAME.next_deadline(state) is None
    with pytest.raises(IllegalAction, match="reveal"):
        act(state, 0, "play", tile="5-5", t=1)
    with pytest.raises(IllegalAction, match="no hand-over to you"):
        act(state, 1, "reveal", t=1)
    state = act(state, 0, "reveal", t=30)
    assert state.clock.turn == 0 and state.clock.since == 30_000
    state = act(state, 0, "play", tile="5-5", t=35)
    assert state.hand_over and state.turn == 1 and not state.clock.running
    state = act(state, 1, "reveal", t=200)  # the hand-over took long: nobody's bank pays for it
    state = act(state, 1, "play", tile="5-3", end="E", t=211)
    assert state.clock.banks == (120_000, 119_000)


def test_reveal_is_only_for_a_shared_device() -> None:
    state = dealt(H0_DEFAULT, H1_DEFAULT)
    with pytest.raises(IllegalAction, match="shared device"):
        act(state, 0, "reveal", t=1)
