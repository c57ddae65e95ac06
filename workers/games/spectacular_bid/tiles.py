"""Tiles of the double-six set (SB-2) and the four ends of the layout (SB-4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from workers.games.errors import MalformedAction, quote


@dataclass(frozen=True, slots=True)
class Tile:
    """A domino, always held as (high, low): "6-4" and "4-6" name the same tile. Reach it through `tile`,
    `Tile.parse` or `TILES`: the 28 tiles, each made once (and unpickled as itself)."""

    high: int
    low: int
    name: str = field(init=False, repr=False, compare=False)
    """"6-4": made once, read by every play's event."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", f"{self.high}-{self.low}")

    @property
    def double(self) -> bool:
        return self.high == self.low

    @property
    def pips(self) -> int:
        return self.high + self.low

    def other(self, pip: int) -> int:
        """The half that faces out when the half showing `pip` is matched."""
        return self.low if pip == self.high else self.high

    @staticmethod
    def parse(text: object) -> Tile:
        if isinstance(text, str):
            known = _BY_NAME.get(text)  # every replayed step and deal parses tiles: one lookup
            if known is not None:
                return known
            a, sep, b = text.partition("-")
            if sep and a.isdigit() and b.isdigit() and len(a) == 1 and len(b) == 1:
                x, y = int(a), int(b)
                if x <= 6 and y <= 6:
                    return tile(x, y)
        raise MalformedAction(f'unknown tile {quote(text)}: a tile is "a-b" with a and b from 0 to 6')

    def __str__(self) -> str:
        return self.name

    def __reduce__(self) -> tuple[object, tuple[int, int]]:
        return tile, (self.high, self.low)  # unpickled as the set's own tile


TILES: tuple[Tile, ...] = tuple(Tile(high, low) for high in range(6, -1, -1) for low in range(high, -1, -1))
"""The 28 tiles of the set, each one interned: the deck a host shuffles."""

_BY_PIPS = {(t.high, t.low): t for t in TILES}
_BY_NAME = {f"{a}-{b}": t for t in TILES for a, b in ((t.high, t.low), (t.low, t.high))}


def tile(a: int, b: int) -> Tile:
    return _BY_PIPS[(a, b) if a >= b else (b, a)]


def lead_rank(t: Tile) -> tuple[int, int, int]:
    """SB-3: any double beats any other tile, higher doubles first; then pip sum, then the larger half."""
    return (1, t.high, 0) if t.double else (0, t.pips, t.high)


def round_to_five(n: int) -> int:
    """SB-8: a hand sum to the nearest multiple of 5 (17 → 15, 18 → 20)."""
    return (n + 2) // 5 * 5


class End(Enum):
    W = "W"
    E = "E"
    N = "N"
    S = "S"

    @staticmethod
    def parse(text: object) -> End:
        try:
            return End(text)
        except ValueError:
            raise MalformedAction(f"unknown end {quote(text)}: an end is W, E, N or S") from None


# The ends as plain names for the hot paths (reading `End.W` costs several globals, see state.py's phases)
W, E, N, S = End.W, End.E, End.N, End.S
MAIN_ENDS = (End.W, End.E)
LATERAL_ENDS = (End.N, End.S)
