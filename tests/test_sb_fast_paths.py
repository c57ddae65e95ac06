"""The hot paths of Spectacular Bid's engine that build values directly must build the same values."""

from __future__ import annotations

import pickle
import random
from dataclasses import fields

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablehall.selfplay import self_play
from tests.sb import GAME, layout_of, tiles
from workers.games.clock import Clock
from workers.games.engine import Millis, Seat
from workers.games.spectacular_bid.actions import Play
from workers.games.spectacular_bid.layout import Layout
from workers.games.spectacular_bid.options import Options
from workers.games.spectacular_bid.rules import legal_actions
from workers.games.spectacular_bid.state import Auction, Phase, Round, Sale, State
from workers.games.spectacular_bid.tiles import TILES, End, Tile, tile
from workers.games.spectacular_bid.view import LayoutView
from workers.games.values import evolve


def test_played_and_drawn_rounds_are_the_round_evolved() -> None:
    # every field differs from its default, so a field given in the wrong place shows
    round = Round(
        (frozenset(tiles("6-6 6-1")), frozenset(tiles("5-5"))),
        tiles("0-0 1-0"),
        layout_of("6-6", "6-4 E"),
        jockey=Seat(1),
        leader=Seat(0),
        forced=tiles("6-6")[0],
        auction=Auction(20, Seat(1)),
        sale=Sale(Seat(1), 20, 5),
        declined=True,
        drawn=tiles("1-0")[0],
        passes=1,
        end="block",
        domino_by=Seat(0),
    )
    assert all(getattr(round, f.name) != f.default for f in fields(Round))
    hands = (frozenset(tiles("6-1")), frozenset(tiles("5-5")))
    layout = layout_of("6-6", "6-4 E", "6-1 W")
    assert round.played(hands, layout) == evolve(round, hands=hands, layout=layout, drawn=None, passes=0)
    drawn = tiles("0-0")[0]
    assert round.drew(hands, (), drawn) == evolve(round, hands=hands, boneyard=(), drawn=drawn)


def test_state_moved_on_is_the_state_evolved() -> None:
    options = Options.parse({"shared_device": True})
    state = State(
        options,
        Clock.fresh(options.clock, 2).start(Seat(0), Millis(1)),
        (150, 50),
        phase=Phase.AUCTION,
        round=Round((frozenset(tiles("6-6")), frozenset(tiles("5-5"))), tiles("0-0")),
        past=(Round((frozenset(), frozenset()), ()),),
        turn=Seat(0),
        ready=frozenset({Seat(1)}),
        paused_at=Millis(4),
        holder=Seat(1),
        hand_over=True,
        winner=Seat(1),
        reason="resign",
        void_reason="fault",
    )
    defaults = State(options, Clock.fresh(options.clock, 2), (0, 0))
    assert all(getattr(state, f.name) != getattr(defaults, f.name) for f in fields(State) if f.name != "options")
    clock = state.clock.start(Seat(1), Millis(9))
    round = Round((frozenset(tiles("6-6")), frozenset()), ())
    assert state.moved_on(Seat(1), clock, False, None, None, None) == evolve(
        state, turn=Seat(1), clock=clock, hand_over=False
    )
    assert state.moved_on(Seat(1), clock, False, (100, 100), round, Phase.LEAD) == evolve(
        state, turn=Seat(1), clock=clock, hand_over=False, points=(100, 100), round=round, phase=Phase.LEAD
    )


def test_a_tile_is_named_once_and_unpickled_as_the_sets_own() -> None:
    for t in TILES:
        assert t.name == f"{t.high}-{t.low}" == str(t)
        assert pickle.loads(pickle.dumps(t)) is t
    assert Tile(6, 4) == tile(4, 6) and hash(Tile(6, 4)) == hash(tile(6, 4))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_a_views_counts_are_the_counts_of_the_layouts_the_plays_would_build(seed: int, greedy: bool) -> None:
    """`Layout.count_after` (what a view shows each legal play would score) against building the layout."""
    checked = 0
    for turn in self_play(GAME, ["A", "B"], random.Random(seed), greedy=[greedy, False]):
        state = turn.match.state
        if state.round is None or state.phase not in (Phase.LEAD, Phase.PLAY):
            continue
        layout, seat = state.round.layout, state.turn
        view = GAME.view(state, seat)
        for action, count in zip(legal_actions(state, seat), view.counts, strict=True):
            if not isinstance(action, Play):
                assert count is None
                continue
            if action.end is None:
                west = action.tile.high if action.west is None else action.west
                built = layout.lead(action.tile, west)
            else:
                built = layout.place(action.tile, action.end)
            assert count == built.count(), (layout, action)
            checked += 1
    assert checked


def _layout_view_walked(layout: Layout) -> LayoutView:
    """The layout's view as the plain walk over its tiles builds it (what the fast build must equal)."""
    lead = layout.placements[0] if layout.placements else None
    lines: dict[End | None, list[str]] = {end: [] for end in End}
    for placed in layout.placements:
        lines.setdefault(placed.end, []).append(str(placed))
    return LayoutView(
        str(lead) if lead is not None else None,
        tuple((end.value, tuple(lines[end])) for end in End),
        layout.spinner,
        tuple((end.value, pip) for end, pip in layout.open_ends()),
        layout.count() if lead is not None else 0,
    )


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(min_value=0, max_value=10_000))
def test_a_layouts_view_is_the_walk_over_its_tiles_also_read_back_from_a_snapshot(seed: int) -> None:
    for turn in self_play(GAME, ["A", "B"], random.Random(seed)):
        round = turn.match.state.round
        if round is None:
            continue
        copy = pickle.loads(pickle.dumps(round.layout))  # its placements are copies, not the interned ones
        assert LayoutView._built(round.layout) == _layout_view_walked(round.layout)
        assert LayoutView._built(copy) == _layout_view_walked(copy)
