"""Helpers for Spectacular Bid tests: deals and positions written the way the rules talk about them."""

from __future__ import annotations

from typing import Any

from workers.games.engine import CHANCE, Millis, Seat, millis
from workers.games.spectacular_bid import SpectacularBid
from workers.games.spectacular_bid.actions import Deal, parse_action
from workers.games.spectacular_bid.layout import Layout
from workers.games.spectacular_bid.state import Round, State
from workers.games.spectacular_bid.tiles import TILES, End, Tile
from workers.games.values import evolve

GAME = SpectacularBid()


def tiles(text: str) -> tuple[Tile, ...]:
    return tuple(Tile.parse(t) for t in text.split())


def deal(hand0: str, hand1: str, boneyard: str | None = None) -> Deal:
    """A deal; the boneyard defaults to the other tiles in set order."""
    h0, h1 = tiles(hand0), tiles(hand1)
    rest = tiles(boneyard) if boneyard is not None else ()
    used = {*h0, *h1, *rest}
    rest += tuple(t for t in TILES if t not in used)
    return Deal((h0, h1), rest)


def new(points: tuple[int, int] = (150, 150), jockey: int | None = None, **options: Any) -> State:
    """A match before its next deal; `jockey` pretends the previous round ended in that seat's domino."""
    state = GAME.start(2, options)
    state = evolve(state, points=points)
    if jockey is not None:
        gone = Round((frozenset(), frozenset()), (), end="domino", domino_by=Seat(jockey))
        state = evolve(state, past=(gone,))
    return state


def dealt(hand0: str, hand1: str, boneyard: str | None = None, at: float = 0, **kw: Any) -> State:
    state, _ = GAME.apply(new(**kw), CHANCE, deal(hand0, hand1, boneyard), millis(at))
    return state


def started(hand0: str, hand1: str, boneyard: str | None = None, at: float = 0, **kw: Any) -> State:
    """Dealt, and both players pressed Continue at `at`: the clocks run from there."""
    state = dealt(hand0, hand1, boneyard, at=at, **kw)
    state = act(state, 0, "ready", at)
    return act(state, 1, "ready", at)


def act(state: State, seat: int, do: str, t: float = 0, **fields: Any) -> State:
    after, _ = GAME.apply(state, Seat(seat), parse_action({"do": do, **fields}), millis(t))
    return after


def events(state: State, seat: int, do: str, t: float = 0, **fields: Any) -> tuple[State, list[dict[str, Any]]]:
    after, happened = GAME.apply(state, Seat(seat), parse_action({"do": do, **fields}), millis(t))
    return after, [e.to_json() for e in happened]


def layout_of(*plays: str) -> Layout:
    """A layout from plays like "5-5" (the lead, first number at W) then "5-3 E", "5-2 W", ..."""
    layout = Layout()
    for play in plays:
        tile_text, _, end = play.partition(" ")
        t = Tile.parse(tile_text)
        layout = layout.lead(t, int(tile_text[0])) if not end else layout.place(t, End(end))
    return layout


def at(t: float) -> Millis:
    return millis(t)


# Neutral hands for auction and clock tests: seat 0 holds 5-5, the highest double dealt.
H0_DEFAULT = "5-5 5-2 6-1 0-1 0-2 0-3 0-4"
H1_DEFAULT = "5-3 5-6 4-4 3-3 2-2 1-1 1-2"
