"""The optional per-decision limit: when it runs out, that player loses the game, ranked last."""

from __future__ import annotations

import pytest

from tests.f501 import GAME, act, dealt, load, run
from workers.games.engine import millis
from workers.games.errors import IllegalAction


def test_no_clock_by_default() -> None:
    assert GAME.next_deadline(dealt()) is None


def test_decision_limit_runs_out_and_that_player_loses() -> None:
    state = act(dealt(decision_limit_s=30), 0, "bid", 10, amount=80)
    assert GAME.next_deadline(state) == millis(40)  # a fresh limit for seat 1's decision
    later, _ = GAME.on_deadline(state, millis(39.999))
    assert not GAME.is_over(later)
    over, happened = GAME.on_deadline(state, millis(40))
    assert GAME.is_over(over)
    out = GAME.outcome(over, millis(40))
    assert out["status"] == "finished" and out["reason"] == "time" and out["flagged"] == 1
    assert out["winners"] == [0, 2]  # the others tie on 501 and share
    assert [e.kind for e in happened] == ["time", "game_over"]


def test_arriving_at_the_deadline_is_too_late() -> None:
    state = dealt(decision_limit_s=30)
    with pytest.raises(IllegalAction, match="too late"):
        act(state, 0, "bid", 30, amount=80)
    act(state, 0, "bid", 29.999, amount=80)


def test_look_does_not_restart_the_decision() -> None:
    state = act(dealt(decision_limit_s=30), 0, "look", 20)
    assert GAME.next_deadline(state) == millis(30)


def test_time_loss_record_winner_is_lowest_of_the_others() -> None:
    out = run(load("501-time-loss.json"))
    assert out["status"] == "finished" and out["flagged"] == 1 and out["winners"] == [2]
    assert run(load("501-time-exactly-at-deadline.json"))["event"] == 0
    assert run(load("501-time-just-in.json"))["status"] == "in_progress"


def test_no_clock_between_hands() -> None:
    state = act(act(act(act(dealt(decision_limit_s=30), 0, "bid", amount=80), 1, "pass"), 2, "pass"), 0, "abandon")
    assert GAME.needs_deal(state) and GAME.next_deadline(state) is None


def test_bad_options_are_malformed() -> None:
    from workers.games.errors import MalformedAction

    for options in ({"decision_limit_s": 0}, {"start_score": "501"}, {"limit": 3}):
        with pytest.raises(MalformedAction):
            GAME.start(3, options, 0)  # type: ignore[arg-type]
