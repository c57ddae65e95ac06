"""What a Spectacular Bid player can do, as small values read from and written to records (RECORDS.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from workers.games.engine import JSON
from workers.games.errors import MalformedAction, quote
from workers.games.spectacular_bid.tiles import TILES, End, Tile
from workers.games.values import built_fast


@built_fast
@dataclass(frozen=True, slots=True)
class Ready:
    """Start/Continue: both players press it, or the ready timeout passes, and the clocks start."""

    do: ClassVar[str] = "ready"

    def to_json(self) -> dict[str, JSON]:
        return {"do": self.do}


@built_fast
@dataclass(frozen=True, slots=True)
class Reveal:
    """Shared device: the player now holding the device shows their tiles; their clock starts."""

    do: ClassVar[str] = "reveal"

    def to_json(self) -> dict[str, JSON]:
        return {"do": self.do}


@built_fast
@dataclass(frozen=True, slots=True)
class Play:
    """A tile laid on an end; a lead names no end and shows `west` at W."""

    tile: Tile
    end: End | None = None
    west: int | None = None
    do: ClassVar[str] = "play"

    def to_json(self) -> dict[str, JSON]:
        if self.end is None:
            west = self.tile.high if self.west is None else self.west
            return {"do": self.do, "tile": f"{west}-{self.tile.other(west)}"}
        return {"do": self.do, "tile": str(self.tile), "end": self.end.value}


@built_fast
@dataclass(frozen=True, slots=True)
class Draw:
    do: ClassVar[str] = "draw"

    def to_json(self) -> dict[str, JSON]:
        return {"do": self.do}


@built_fast
@dataclass(frozen=True, slots=True)
class Bid:
    """The opening bid of the lead auction (SB-9)."""

    amount: int
    do: ClassVar[str] = "bid"

    def to_json(self) -> dict[str, JSON]:
        return {"do": self.do, "amount": self.amount}


@built_fast
@dataclass(frozen=True, slots=True)
class Raise:
    amount: int
    do: ClassVar[str] = "raise"

    def to_json(self) -> dict[str, JSON]:
        return {"do": self.do, "amount": self.amount}


@built_fast
@dataclass(frozen=True, slots=True)
class Accept:
    do: ClassVar[str] = "accept"

    def to_json(self) -> dict[str, JSON]:
        return {"do": self.do}


@built_fast
@dataclass(frozen=True, slots=True)
class Decline:
    do: ClassVar[str] = "decline"

    def to_json(self) -> dict[str, JSON]:
        return {"do": self.do}


@built_fast
@dataclass(frozen=True, slots=True)
class Resign:
    do: ClassVar[str] = "resign"

    def to_json(self) -> dict[str, JSON]:
        return {"do": self.do}


Action = Ready | Reveal | Play | Draw | Bid | Raise | Accept | Decline | Resign


@built_fast
@dataclass(frozen=True, slots=True)
class Deal:
    """One round's deal (SB-2): seven tiles each, the other fourteen in draw order. Chance's action."""

    hands: tuple[tuple[Tile, ...], tuple[Tile, ...]]
    boneyard: tuple[Tile, ...]

    def to_json(self) -> dict[str, JSON]:
        return {
            "hands": [[str(t) for t in hand] for hand in self.hands],
            "boneyard": [str(t) for t in self.boneyard],
        }

    @staticmethod
    def from_order(order: Sequence[int]) -> Deal:
        """The deal of a shuffled set: `order` is a permutation of the 28 tiles' indexes."""
        if sorted(order) != list(range(len(TILES))):
            raise MalformedAction("a shuffle must be a permutation of the 28 tiles")
        tiles = [TILES[i] for i in order]
        return Deal((tuple(tiles[0:7]), tuple(tiles[7:14])), tuple(tiles[14:]))

    @staticmethod
    def parse(obj: JSON) -> Deal:
        """A record's deal. Boneyard entries repeating a dealt tile are skipped (see README)."""
        if not isinstance(obj, dict):
            raise MalformedAction('a round is {"hands": [[7 tiles], [7 tiles]], "boneyard": [14 tiles]}')
        hands_raw, boneyard_raw = obj.get("hands"), obj.get("boneyard")
        if not isinstance(hands_raw, list) or len(hands_raw) != 2:
            raise MalformedAction('"hands" must hold two hands')
        hands: list[tuple[Tile, ...]] = []
        for seat, hand_raw in enumerate(hands_raw):
            if not isinstance(hand_raw, list) or len(hand_raw) != 7:
                raise MalformedAction(f"hand {seat} must hold 7 tiles")
            hands.append(tuple(Tile.parse(t) for t in hand_raw))
        dealt = [*hands[0], *hands[1]]
        if len(set(dealt)) != 14:
            raise MalformedAction("the two hands repeat a tile")
        if not isinstance(boneyard_raw, list):
            raise MalformedAction('"boneyard" must be a list of tiles')
        boneyard: list[Tile] = []
        seen = set(dealt)
        for raw in boneyard_raw:
            t = Tile.parse(raw)
            if t not in seen:
                seen.add(t)
                boneyard.append(t)
        if len(seen) != len(TILES):
            missing = ", ".join(str(t) for t in TILES if t not in seen)
            raise MalformedAction(f"the deal does not hold all 28 tiles (missing {missing})")
        return Deal((hands[0], hands[1]), tuple(boneyard))


def parse_action(obj: Mapping[str, JSON]) -> Action:
    """An event's action (the `do` and its fields), like python-chess's Move.from_uci."""
    do = obj.get("do")
    if do == "play":
        if "tile" not in obj:
            raise MalformedAction('a play names its "tile"')
        raw = obj["tile"]
        tile = Tile.parse(raw)
        if obj.get("end") is None:
            assert isinstance(raw, str)
            return Play(tile, None, int(raw[0]))
        return Play(tile, End.parse(obj["end"]))
    if do in ("bid", "raise"):
        amount = obj.get("amount")
        if not isinstance(amount, int) or isinstance(amount, bool):
            raise MalformedAction(f'a {do} needs a whole-number "amount", not {quote(amount)}')
        return Bid(amount) if do == "bid" else Raise(amount)
    simple: dict[object, Action] = {
        "ready": Ready(),
        "reveal": Reveal(),
        "draw": Draw(),
        "accept": Accept(),
        "decline": Decline(),
        "resign": Resign(),
    }
    if do in simple:
        return simple[do]
    raise MalformedAction(f"unknown action {quote(do)} for Spectacular Bid")
