"""What a seat can do in 501♠, as record events (RECORDS.md) without `seat` and `t`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workers.games.engine import JSON, Seat
from workers.games.errors import MalformedAction, quote
from workers.games.five_oh_one.cards import Card, Suit, parse
from workers.games.values import built_fast

MIN_BID = 66  # F-3
MAX_BID = 220  # F-3 [ours]: 120 + 40 + 3×20

TRUMPS: dict[str, Suit | None] = {"S": Suit.S, "H": Suit.H, "D": Suit.D, "C": Suit.C, "NT": None}


def trump_code(trump: Suit | None) -> str:
    return "NT" if trump is None else trump.value


@built_fast
@dataclass(frozen=True, slots=True)
class Look:
    """Turn one's own cards face up during the bidding (ends the blind, F-4)."""

    def to_json(self) -> dict[str, JSON]:
        return {"do": "look"}


@built_fast
@dataclass(frozen=True, slots=True)
class Bid:
    amount: int

    def to_json(self) -> dict[str, JSON]:
        return {"do": "bid", "amount": self.amount}


@built_fast
@dataclass(frozen=True, slots=True)
class Pass:
    def to_json(self) -> dict[str, JSON]:
        return {"do": "pass"}


@built_fast
@dataclass(frozen=True, slots=True)
class Abandon:
    """The declarer gives up the hand once the talon is exposed (F-5)."""

    def to_json(self) -> dict[str, JSON]:
        return {"do": "abandon"}


@built_fast
@dataclass(frozen=True, slots=True)
class Declare:
    """Trump (None: no-trump), final target, and the card given face down to each opponent (F-5)."""

    trump: Suit | None
    target: int
    give: tuple[tuple[Seat, Card], ...]
    """(opponent, card) pairs in seat order."""

    def to_json(self) -> dict[str, JSON]:
        return {
            "do": "declare",
            "trump": trump_code(self.trump),
            "target": self.target,
            "give": {str(seat): card.code for seat, card in self.give},
        }


@built_fast
@dataclass(frozen=True, slots=True)
class Play:
    """A card to the trick; `marriage` announces K+Q with this lead (F-7)."""

    card: Card
    marriage: bool = False

    def to_json(self) -> dict[str, JSON]:
        out: dict[str, JSON] = {"do": "play", "card": self.card.code}
        if self.marriage:
            out["marriage"] = True
        return out


Action = Look | Bid | Pass | Abandon | Declare | Play

LOOK = Look()
PASS = Pass()
ABANDON = Abandon()
BIDS: tuple[Bid, ...] = tuple(Bid(amount) for amount in range(MIN_BID, MAX_BID + 1))


def parse_action(obj: Mapping[str, JSON]) -> Action:
    """An action from a record event or a client command; `MalformedAction` if it cannot be read."""
    do = obj.get("do")
    if do == "look":
        return LOOK
    if do == "pass":
        return PASS
    if do == "abandon":
        return ABANDON
    if do == "bid":
        return Bid(_whole(obj, "amount"))
    if do == "play":
        marriage = obj.get("marriage", False)
        if not isinstance(marriage, bool):
            raise MalformedAction(f'"marriage" must be true or false, not {quote(marriage)}')
        return Play(parse(_field(obj, "card")), marriage)
    if do == "declare":
        trump = _field(obj, "trump")
        if not isinstance(trump, str) or trump not in TRUMPS:
            raise MalformedAction(f'"trump" must be one of S, H, D, C, NT, not {quote(trump)}')
        return Declare(TRUMPS[trump], _whole(obj, "target"), _gifts(_field(obj, "give")))
    raise MalformedAction(f"unknown action {quote(do)}: 501 knows look, bid, pass, abandon, declare and play")


def _field(obj: Mapping[str, JSON], name: str) -> Any:
    if name not in obj:
        raise MalformedAction(f'"{obj.get("do")}" needs the field "{name}"')
    return obj[name]


def _whole(obj: Mapping[str, JSON], name: str) -> int:
    value = _field(obj, name)
    if not isinstance(value, int) or isinstance(value, bool):
        raise MalformedAction(f'"{name}" must be a whole number, not {quote(value)}')
    return value


def _gifts(give: JSON) -> tuple[tuple[Seat, Card], ...]:
    if not isinstance(give, dict):
        raise MalformedAction('"give" must be an object {"<seat>": "<card>", ...}')
    out: list[tuple[Seat, Card]] = []
    for key, code in give.items():
        if not isinstance(key, str) or not key.isdigit() or not key.isascii():
            raise MalformedAction(f'"give": {quote(key)} is not a seat number')
        out.append((Seat(int(key)), parse(code)))
    return tuple(sorted(out, key=lambda pair: pair[0]))
