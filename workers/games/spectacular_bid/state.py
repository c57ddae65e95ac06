"""The state of a Spectacular Bid match: immutable values, each change a new value."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from workers.games.clock import Clock
from workers.games.engine import JSON, Millis, Seat
from workers.games.spectacular_bid.layout import Layout
from workers.games.spectacular_bid.options import Options
from workers.games.spectacular_bid.tiles import Tile
from workers.games.values import built_fast

SEATS = (Seat(0), Seat(1))
MIN_BID = 15  # SB-9
BID_STEP = 5
JOCKEY_DISCOUNT = 15


OTHER: tuple[Seat, Seat] = (Seat(1), Seat(0))
"""The other seat, by seat: read inline where every move asks."""


def other(seat: Seat) -> Seat:
    return OTHER[seat]


class Phase(Enum):
    DEAL = "deal"
    """Waiting for chance to deal the next round."""
    READY = "ready"
    """Clocks stopped until both press Continue or the ready timeout passes (SB-10)."""
    AUCTION = "auction"
    LEAD = "lead"
    PLAY = "play"
    OVER = "over"


# The phases as plain names for the rules' hot paths: on Python 3.11 reading `Phase.PLAY` goes through the
# enum class's attribute machinery, several times the cost of reading a module's global.
DEAL, READY, AUCTION, LEAD, PLAY, OVER = Phase.DEAL, Phase.READY, Phase.AUCTION, Phase.LEAD, Phase.PLAY, Phase.OVER


@built_fast
@dataclass(frozen=True, slots=True)
class Auction:
    """The standing bid of a lead auction (SB-9); None before the opening answer."""

    bid: int | None = None
    bidder: Seat | None = None


@built_fast
@dataclass(frozen=True, slots=True)
class Sale:
    """How an auction ended: the author of the accepted bid, the bid, and what they paid."""

    winner: Seat
    bid: int
    paid: int


@built_fast
@dataclass(frozen=True, slots=True)
class Round:
    hands: tuple[frozenset[Tile], frozenset[Tile]]
    boneyard: tuple[Tile, ...]
    """The tiles still to draw, next first."""
    layout: Layout = Layout()
    jockey: Seat | None = None
    """Who holds the lead privilege and the auction discount this round (SB-7)."""
    leader: Seat | None = None
    forced: Tile | None = None
    """SB-3: the tile the leader must lead with, in the first round and after a block."""
    auction: Auction | None = None
    sale: Sale | None = None
    declined: bool = False
    drawn: Tile | None = None
    """SB-6: a drawn playable tile, which must be placed at once."""
    passes: int = 0
    """Forced passes in succession; two block the round (SB-8)."""
    end: str | None = None
    domino_by: Seat | None = None

    def played(self, hands: tuple[frozenset[Tile], frozenset[Tile]], layout: Layout) -> Round:
        """This round after a tile is laid: no drawn tile waits to be placed and no passes stand."""
        return self._moved(hands, self.boneyard, layout, None, 0)

    def drew(
        self, hands: tuple[frozenset[Tile], frozenset[Tile]], boneyard: tuple[Tile, ...], drawn: Tile | None
    ) -> Round:
        """This round after a draw."""
        return self._moved(hands, boneyard, self.layout, drawn, self.passes)

    def _moved(
        self,
        hands: tuple[frozenset[Tile], frozenset[Tile]],
        boneyard: tuple[Tile, ...],
        layout: Layout,
        drawn: Tile | None,
        passes: int,
    ) -> Round:
        """The same as `evolve(self, hands=..., boneyard=..., layout=..., drawn=..., passes=...)`, built
        directly: it runs at every play and draw."""
        return Round(
            hands,
            boneyard,
            layout,
            self.jockey,
            self.leader,
            self.forced,
            self.auction,
            self.sale,
            self.declined,
            drawn,
            passes,
            self.end,
            self.domino_by,
        )

    def summary(self) -> dict[str, JSON]:
        auction: JSON = None
        if self.declined:
            auction = "declined"
        elif self.sale is not None:
            auction = {"winner": self.sale.winner, "bid": self.sale.bid, "paid": self.sale.paid}
        out: dict[str, JSON] = {
            "end": self.end,
            "jockey": self.jockey,
            "lead_by": self.leader,
            "auction": auction,
        }
        if self.domino_by is not None:
            out["domino_by"] = self.domino_by
        return out


@built_fast
@dataclass(frozen=True, slots=True)
class State:
    options: Options
    clock: Clock
    points: tuple[int, int]
    phase: Phase = Phase.DEAL
    round: Round | None = None
    past: tuple[Round, ...] = ()
    turn: Seat | None = None
    """Whose decision it is (auction answer, lead, play), whether or not the clock runs yet."""
    ready: frozenset[Seat] = frozenset()
    paused_at: Millis = Millis(0)
    """When the deal or the settlement was shown: the ready timeout counts from here."""
    holder: Seat | None = None
    """Shared device: who revealed their tiles last."""
    hand_over: bool = False
    """Shared device: the clock waits for `turn` to reveal."""
    winner: Seat | None = None
    reason: str | None = None
    void_reason: str | None = None

    def moved_on(
        self,
        turn: Seat,
        clock: Clock,
        hand_over: bool,
        points: tuple[int, int] | None,
        round: Round | None,
        phase: Phase | None,
    ) -> State:
        """This state after a move: `turn` to decide on `clock`, and the move's new points, round and phase
        where given. The same as `evolve(self, turn=..., clock=..., hand_over=..., ...)`, built directly: it
        runs at nearly every move."""
        return State(
            self.options,
            clock,
            self.points if points is None else points,
            self.phase if phase is None else phase,
            self.round if round is None else round,
            self.past,
            turn,
            self.ready,
            self.paused_at,
            self.holder,
            hand_over,
            self.winner,
            self.reason,
            self.void_reason,
        )
