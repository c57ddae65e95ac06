"""The hot paths of Spectacular Bid's engine that build values directly must build the same values."""

from __future__ import annotations

from dataclasses import fields

from tests.sb import layout_of, tiles
from workers.games.engine import Seat
from workers.games.spectacular_bid.state import Auction, Round, Sale
from workers.games.values import evolve


def test_played_round_is_the_round_evolved() -> None:
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
