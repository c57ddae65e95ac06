"""Views: a seat sees its own cards (once looked, or once the bidding ended) and public facts, never more."""

from __future__ import annotations

import json

from tests.f501 import GAME, act, dealt
from workers.games.engine import Seat


def shown(state: object, seat: int | None) -> str:
    return json.dumps(GAME.view(state, None if seat is None else Seat(seat)).to_json())  # type: ignore[arg-type]


def test_blind_hand_withheld_until_look() -> None:
    state = dealt()
    view = GAME.view(state, Seat(0)).to_json()
    assert view["hand"] is None and view["hand_sizes"] == [7, 7, 7]
    assert '"KH"' not in shown(state, 0) and view["talon"] is None
    assert {"do": "bid", "amount": {"min": 66, "max": 220}} in view["legal"] and {"do": "look"} in view["legal"]
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


def test_cards_given_face_down_are_seen_only_by_their_receiver() -> None:
    state = act(act(act(dealt(), 0, "bid", amount=80), 1, "pass"), 2, "pass")
    state = act(state, 0, "declare", trump="S", target=100, give={"1": "TH", "2": "KS"})
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
