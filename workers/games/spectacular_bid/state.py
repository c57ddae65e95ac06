"""The state of a Spectacular Bid match: immutable values, each change a new value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from workers.games.clock import Clock, ClockSettings
from workers.games.engine import JSON, Millis, Seat, millis, seconds
from workers.games.errors import MalformedAction, quote
from workers.games.spectacular_bid.layout import Layout
from workers.games.spectacular_bid.tiles import Tile

SEATS = (Seat(0), Seat(1))
MIN_BID = 15  # SB-9
BID_STEP = 5
JOCKEY_DISCOUNT = 15


def other(seat: Seat) -> Seat:
    return Seat(1 - seat)


@dataclass(frozen=True, slots=True)
class Options:
    start_points: int = 150
    bank: Millis = Millis(120_000)
    delay: Millis = Millis(10_000)
    ready_timeout: Millis = Millis(60_000)
    shared_device: bool = False

    @staticmethod
    def parse(raw: Mapping[str, JSON]) -> Options:
        known = {"start_points", "bank_s", "delay_s", "ready_timeout_s", "shared_device"}
        unknown = set(raw) - known
        if unknown:
            raise MalformedAction(f"unknown option(s) {quote(', '.join(sorted(unknown)), marks=False)}")
        start = raw.get("start_points", 150)
        if not isinstance(start, int) or isinstance(start, bool) or not 5 <= start <= 10_000 or start % 5:
            raise MalformedAction(f"start_points must be a multiple of 5 from 5 to 10000, not {quote(start)}")
        shared = raw.get("shared_device", False)
        if not isinstance(shared, bool):
            raise MalformedAction("shared_device must be true or false")

        def duration(key: str, default: float, least: float) -> Millis:
            value = raw.get(key, default)
            if not isinstance(value, int | float) or isinstance(value, bool) or not least <= value <= 86_400:
                raise MalformedAction(f"{key} must be a number of seconds from {least} to 86400, not {quote(value)}")
            return millis(value)

        return Options(
            start,
            duration("bank_s", 120, 0),
            duration("delay_s", 10, 0),
            duration("ready_timeout_s", 60, 0),
            shared,
        )

    def to_json(self) -> dict[str, JSON]:
        return {
            "start_points": self.start_points,
            "bank_s": seconds(self.bank),
            "delay_s": seconds(self.delay),
            "ready_timeout_s": seconds(self.ready_timeout),
            "shared_device": self.shared_device,
        }

    @property
    def clock(self) -> ClockSettings:
        return ClockSettings(self.bank, self.delay)


class Phase(Enum):
    DEAL = "deal"
    """Waiting for chance to deal the next round."""
    READY = "ready"
    """Clocks stopped until both press Continue or the ready timeout passes (SB-10)."""
    AUCTION = "auction"
    LEAD = "lead"
    PLAY = "play"
    OVER = "over"


@dataclass(frozen=True, slots=True)
class Auction:
    """The standing bid of a lead auction (SB-9); None before the opening answer."""

    bid: int | None = None
    bidder: Seat | None = None


@dataclass(frozen=True, slots=True)
class Sale:
    """How an auction ended: the author of the accepted bid, the bid, and what they paid."""

    winner: Seat
    bid: int
    paid: int


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
