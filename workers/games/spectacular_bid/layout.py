"""The layout: a main line with ends W and E, one spinner, lateral arms N and S (SB-4), and its count (SB-5)."""

from __future__ import annotations

from dataclasses import dataclass

from workers.games.spectacular_bid.tiles import MAIN_ENDS, End, N, S, Tile
from workers.games.values import built_fast


@built_fast
@dataclass(frozen=True, slots=True)
class Arm:
    """The outer tile of one end: the pip open to play on, and whether that tile is a double."""

    pip: int
    double: bool

    @property
    def count(self) -> int:
        # SB-5: a double at an end counts both halves
        return self.pip * 2 if self.double else self.pip


@built_fast
@dataclass(frozen=True, slots=True)
class Placement:
    """A tile as it lies: `inner` touches the layout (the W half for the lead), `outer` faces out."""

    inner: int
    outer: int
    end: End | None

    def __str__(self) -> str:
        return f"{self.inner}-{self.outer}"


@built_fast
@dataclass(frozen=True, slots=True)
class Layout:
    placements: tuple[Placement, ...] = ()
    arms: tuple[tuple[End, Arm], ...] = ()
    spinner: int | None = None
    """The pip of the first double played in the round (SB-4), once there is one."""
    spinner_open: tuple[End, ...] = ()
    """Main ends whose outer tile is still the spinner: its main sides not yet occupied."""
    ends: tuple[tuple[End, int], ...] = ()
    """Each end a tile may be played on now, with the pip it must match (derived, kept for speed)."""

    @property
    def empty(self) -> bool:
        return not self.placements

    @property
    def laterals_open(self) -> bool:
        # SB-4: N and S open only after both main sides of the spinner are occupied
        return self.spinner is not None and not self.spinner_open

    def open_ends(self) -> tuple[tuple[End, int], ...]:
        """Each end a tile may be played on now, with the pip it must match."""
        return self.ends

    def fits(self, tile: Tile, end: End) -> bool:
        pip = self.pip_at(end)
        return pip is not None and (pip == tile.high or pip == tile.low)

    def pip_at(self, end: End) -> int | None:
        """The pip a tile played on `end` must match, or None when `end` is not open."""
        for e, pip in self.ends:
            if e is end:
                return pip
        return None

    def count(self) -> int:
        """SB-5: the sum of the open ends; a lone tile counts once, an unused lateral arm zero."""
        if len(self.placements) == 1:
            only = self.placements[0]
            return only.inner + only.outer
        total = 0
        for _, arm in self.arms:  # a plain loop: this runs after every play
            total += arm.pip * 2 if arm.double else arm.pip
        return total

    def count_after(self, tile: Tile, end: End, pip: int) -> int:
        """`place_on(tile, end, pip).count()` without building that layout (a view counts every legal play):
        the end played on shows the tile's other half, every other arm stays as it is."""
        outer = tile.low if pip == tile.high else tile.high
        total = outer * 2 if tile.high == tile.low else outer
        for e, arm in self.arms:
            if e is not end:
                total += arm.pip * 2 if arm.double else arm.pip
        return total

    def lead(self, tile: Tile, west: int) -> Layout:
        """SB-4: the lead shows `west` at W and its other half at E; a double lead is the spinner."""
        east = tile.other(west)
        arm = Arm(west, tile.double)
        arms = ((End.W, arm), (End.E, Arm(east, tile.double)))
        if tile.double:
            return _laid((Placement(west, east, None),), arms, west, MAIN_ENDS)
        return _laid((Placement(west, east, None),), arms, None, ())

    def place(self, tile: Tile, end: End) -> Layout:
        """`tile` laid on `end` (the caller has checked that it fits)."""
        pip = self.pip_at(end)
        assert pip is not None
        return self.place_on(tile, end, pip)

    def place_on(self, tile: Tile, end: End, pip: int) -> Layout:
        """`tile` laid on `end`, which shows `pip` (the caller has checked that it fits)."""
        high = tile.high
        double = high == tile.low
        outer = tile.low if pip == high else high
        placements = (*self.placements, _PLACED[end._value_][pip][outer])
        played = (end, _ARMS[double][outer])
        spinner, spinner_open = self.spinner, self.spinner_open
        if spinner_open and end in spinner_open:
            spinner_open = tuple(e for e in spinner_open if e is not end)
        elif double and spinner is None:
            # SB-4 [ours]: a first double played later at W or E: the line occupies one main side
            spinner, spinner_open = high, (end,)
        arms = self.arms
        if len(arms) == 2 and (spinner is None or spinner_open):
            # the common case: the main line alone, played at W or E; the other end stays first
            kept = arms[1] if arms[0][0] is end else arms[0]
            ends = ((kept[0], kept[1].pip), (end, outer))
            return Layout(placements, (kept, played), spinner, spinner_open, ends)
        for i, (e, _) in enumerate(arms):  # the end played on goes last, the others keep their order
            if e is end:
                arms = arms[:i] + arms[i + 1 :]
                break
        return _laid(placements, (*arms, played), spinner, spinner_open)

    def line(self, end: End) -> tuple[Placement, ...]:
        """The tiles laid on one end, from the centre outwards."""
        return tuple(p for p in self.placements if p.end is end)


def _laid(
    placements: tuple[Placement, ...],
    arms: tuple[tuple[End, Arm], ...],
    spinner: int | None,
    spinner_open: tuple[End, ...],
) -> Layout:
    if spinner is None or spinner_open:
        # no lateral arm yet: the ends are the main line's, in the arms' order
        return Layout(placements, arms, spinner, spinner_open, tuple([(end, arm.pip) for end, arm in arms]))
    ends: list[tuple[End, int]] = []
    north = south = spinner  # an unused lateral arm shows the spinner
    for end, arm in arms:  # plain loops, no dict: this runs after every play
        if end is N:
            north = arm.pip
        elif end is S:
            south = arm.pip
        else:
            ends.append((end, arm.pip))
    # SB-4: N and S open only after both main sides of the spinner are occupied
    ends += ((N, north), (S, south))
    return Layout(placements, arms, spinner, spinner_open, tuple(ends))


_ARMS = tuple(tuple(Arm(pip, double) for pip in range(7)) for double in (False, True))
"""Every arm, by whether its tile is a double and by its open pip: made once, shared by all layouts."""
_PLACED = {
    end.value: tuple(tuple(Placement(inner, outer, end) for outer in range(7)) for inner in range(7)) for end in End
}
"""Every tile as it can lie on an end, by the end's name, the inner pip and the outer one: made once."""


def interned() -> tuple[Placement, ...]:
    """Every tile as it can lie on an end, as made once here: each placement of a layout built by play but
    its lead is one of these (a layout read back from a snapshot has copies)."""
    return tuple(p for by_inner in _PLACED.values() for by_outer in by_inner for p in by_outer)
