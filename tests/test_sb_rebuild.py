"""The layout laid again from a view (`spectacular_bid.rebuild.laid`) is the layout the view was made from:
the same lines, spinner, open ends and count, at every step of self-played matches."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tablehall.selfplay import self_play
from workers.games.engine import Seat
from workers.games.errors import MalformedAction
from workers.games.spectacular_bid import SpectacularBid
from workers.games.spectacular_bid.rebuild import laid
from workers.games.spectacular_bid.view import LayoutView


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_every_layout_of_a_match_is_laid_again_from_its_view(seed: int) -> None:
    game = SpectacularBid()
    checked = 0
    for turn in self_play(game, ["A", "B"], random.Random(seed), options={"start_points": 60}, greedy=[True, False]):
        state = turn.match.state
        if state.round is None:
            continue
        shown = game.view(state, Seat(0)).to_json()["layout"]
        again = laid(shown["lead"], shown["lines"], shown["spinner"])
        assert LayoutView.of(again).to_json() == LayoutView.of(state.round.layout).to_json()
        assert sorted(again.open_ends(), key=str) == sorted(state.round.layout.open_ends(), key=str)
        assert again.count() == state.round.layout.count()
        checked += 1
    assert checked > 0


def test_an_empty_layout_and_a_tile_that_does_not_fit() -> None:
    assert laid(None, {}, None).empty
    with pytest.raises(MalformedAction):
        laid("6-4", {"W": ["5-1"]}, None)
