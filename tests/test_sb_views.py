"""Views: what a seat or a spectator sees of a Spectacular Bid match (serialized, as clients get it)."""

from __future__ import annotations

import json

from tests.sb import GAME, H0_DEFAULT, H1_DEFAULT, act, started
from workers.games.engine import Seat
from workers.games.spectacular_bid.tiles import Tile


def wire(state, seat):  # type: ignore[no-untyped-def]
    return json.loads(json.dumps(GAME.view(state, seat).to_json()))


def test_a_seat_sees_its_hand_the_layout_counts_balances_banks_turn_and_its_legal_actions() -> None:
    state = act(started(H0_DEFAULT, H1_DEFAULT, at=0), 0, "play", tile="5-5", t=13)
    mine = wire(state, Seat(1))
    assert {str(Tile.parse(t)) for t in mine["hand"]} == {str(Tile.parse(t)) for t in H1_DEFAULT.split()}
    assert mine["hand_sizes"] == [6, 7] and mine["boneyard_size"] == 14
    assert mine["layout"]["lead"] == "5-5" and mine["layout"]["count"] == 10
    assert mine["layout"]["open_ends"] == {"W": 5, "E": 5} and mine["layout"]["spinner"] == 5
    assert mine["points"] == [160, 140] and mine["banks_ms"] == [117_000, 120_000]
    assert mine["turn"] == 1 and mine["clock_running"] == 1 and mine["deadline_ms"] == 13_000 + 130_000
    plays = [a for a in mine["legal"] if a["do"] == "play"]
    assert {"do": "play", "tile": "5-3", "end": "W"} in plays and {"do": "play", "tile": "6-5", "end": "E"} in plays
    assert {"do": "resign"} in mine["legal"]
    theirs = wire(state, Seat(0))
    assert theirs["legal"] == [{"do": "resign"}]


def test_a_spectator_sees_only_public_information() -> None:
    state = act(started(H0_DEFAULT, H1_DEFAULT, at=0), 0, "play", tile="5-5", t=1)
    public = wire(state, None)
    assert public["hand"] is None and public["legal"] == []
    assert public["hand_sizes"] == [6, 7] and public["layout"]["lead"] == "5-5"
    text = json.dumps(public)
    hidden = [Tile.parse(t) for t in H1_DEFAULT.split()]
    assert all(f'"{t.high}-{t.low}"' not in text and f'"{t.low}-{t.high}"' not in text for t in hidden)


def test_a_changes_views_share_one_layout_view_and_a_new_layout_gets_its_own() -> None:
    state = act(started(H0_DEFAULT, H1_DEFAULT, at=0), 0, "play", tile="5-5", t=1)
    seats = [GAME.view(state, Seat(0)), GAME.view(state, Seat(1)), GAME.view(state, None)]
    assert seats[0].layout is seats[1].layout is seats[2].layout
    later = act(state, 1, "play", tile="5-3", end="W", t=2)
    moved = GAME.view(later, Seat(0)).layout
    assert moved is not seats[0].layout
    assert moved.lines[0] == ("W", ("5-3",)) and seats[0].layout.lines[0] == ("W", ())
