"""Views: a seat sees its own cards (once looked, or once the bidding ended) and public facts, never more."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tablehall.render import five_lines
from tests.f501 import GAME, act, dealt
from workers.games.engine import Seat, millis

LIMITS = [pytest.param({}, id="no-limit"), pytest.param({"decision_limit_s": 30}, id="limit-30s")]
TIMING = ("limit_ms", "clock_running", "decision_since_ms", "deadline_ms")


def shown(state: object, seat: int | None) -> str:
    return json.dumps(GAME.view(state, None if seat is None else Seat(seat)).to_json())  # type: ignore[arg-type]


@pytest.mark.parametrize("options", LIMITS)
def test_blind_hand_withheld_until_look(options: dict[str, Any]) -> None:
    state = dealt(**options)
    view = GAME.view(state, Seat(0)).to_json()
    assert view["hand"] is None and view["hand_sizes"] == [7, 7, 7]
    assert '"KH"' not in shown(state, 0) and view["talon"] is None
    assert {"do": "bid", "amount": {"min": 66, "max": 220}} in view["legal"] and {"do": "look"} in view["legal"]
    for seat in (1, 2, None):
        assert '"KH"' not in shown(act(state, 0, "look"), seat)
    looked = GAME.view(act(state, 0, "look"), Seat(0)).to_json()
    assert looked["hand"] == ["AS", "KS", "TH", "KH", "AD", "QD", "9D"]
    assert looked["looked"] == [0]
    assert GAME.view(act(state, 0, "look"), Seat(1)).to_json()["hand"] is None


def test_talon_exposed_and_own_cards_shown_when_bidding_ends() -> None:
    state = act(act(act(dealt(), 0, "bid", amount=80), 1, "pass"), 2, "pass")
    for seat in (None, 0, 1, 2):
        assert GAME.view(state, None if seat is None else Seat(seat)).to_json()["talon"] == ["AC", "KC", "QH"]
    assert GAME.view(state, Seat(1)).to_json()["hand"] == ["QS", "JS", "TD", "KD", "TC", "QC", "JC"]
    assert GAME.view(state, None).to_json()["hand"] is None
    assert GAME.view(state, Seat(0)).to_json()["hand_sizes"] == [10, 7, 7]


@pytest.mark.parametrize("options", LIMITS)
def test_cards_given_face_down_are_seen_only_by_their_receiver(options: dict[str, Any]) -> None:
    state = act(act(act(dealt(**options), 0, "bid", 1, amount=80), 1, "pass", 2), 2, "pass", 3)
    state = act(state, 0, "declare", 4, trump="S", target=100, give={"1": "TH", "2": "KS"})
    assert '"TH"' in shown(state, 1) and '"TH"' not in shown(state, 2) and '"TH"' not in shown(state, None)
    assert '"KS"' in shown(state, 2) and '"KS"' not in shown(state, 1) and '"KS"' not in shown(state, None)


def test_spectator_sees_public_play_only() -> None:
    state = act(act(act(dealt(), 0, "bid", amount=80), 1, "pass"), 2, "pass")
    state = act(state, 0, "declare", trump="S", target=100, give={"1": "TH", "2": "KS"})
    state = act(state, 0, "play", card="KH", marriage=True)
    view = GAME.view(state, None).to_json()
    assert view["trick"] == [{"seat": 0, "card": "KH"}] and view["turn"] == 1
    assert view["marriages"] == [{"seat": 0, "suit": "H", "value": 20}]
    assert view["legal"] == [] and view["hand"] is None and view["hand_sizes"] == [7, 8, 8]
    assert GAME.view(state, Seat(1)).to_json()["legal"] == [{"do": "play", "card": "TH"}]


def timing(state: object, seat: int | None = None) -> tuple[object, ...]:
    view = GAME.view(state, None if seat is None else Seat(seat)).to_json()  # type: ignore[arg-type]
    return tuple(view[key] for key in TIMING)


def test_no_decision_limit_no_clock_in_the_view() -> None:
    state = act(dealt(at=5), 0, "bid", 7, amount=80)
    assert timing(state) == timing(state, 1) == (None, None, None, None)


def test_the_running_decision_is_timed_alike_for_every_viewer() -> None:
    """The fields and their meaning are Spectacular Bid's: `deadline_ms` is `next_deadline` in match time."""
    state = dealt(at=5, decision_limit_s=30)
    assert timing(state) == (30_000, 0, 5_000, 35_000)
    state = act(state, 0, "bid", 12.5, amount=80)
    assert timing(state) == (30_000, 1, 12_500, 42_500) and GAME.next_deadline(state) == millis(42.5)
    assert {timing(state, seat) for seat in (None, 0, 1, 2)} == {timing(state)}
    assert GAME.view(state, None).to_json()["turn"] == 1
    looked = act(state, 2, "look", 20)  # a look neither starts nor ends a decision
    assert timing(looked, 2) == timing(state)
    contract = act(act(state, 1, "pass", 13), 2, "pass", 14)
    assert timing(contract, 0) == (30_000, 0, 14_000, 44_000)  # the declarer's declare-or-abandon decision


def test_no_clock_between_hands_nor_once_over() -> None:
    state = act(act(act(dealt(decision_limit_s=30), 0, "bid", amount=80), 1, "pass"), 2, "pass")
    between = act(state, 0, "abandon", 3)
    assert GAME.needs_deal(between) and timing(between) == (30_000, None, None, None)
    flagged, _ = GAME.on_deadline(state, millis(30))
    view = GAME.view(flagged, Seat(0)).to_json()
    assert view["status"] == "finished" and timing(flagged, 0) == (30_000, None, None, None)
    voided, _ = GAME.void(state, "test", millis(1))
    assert timing(voided) == (30_000, None, None, None)


def test_the_terminal_client_counts_the_decision_down() -> None:
    names = ["Ana", "Bia", "Cid"]
    state = act(dealt(decision_limit_s=30), 0, "bid", 10, amount=80)
    lines = five_lines(GAME.view(state, Seat(0)).to_json(), names, now=27_500)
    assert "Time to decide: Bia 12.5s" in lines
    assert not any("Time to decide" in line for line in five_lines(GAME.view(dealt(), Seat(0)).to_json(), names, now=0))
