"""The layout: a main line with ends W and E, one spinner, lateral arms N and S (SB-4), and its count (SB-5)."""

from __future__ import annotations

from dataclasses import dataclass

from workers.games.spectacular_bid.tiles import LATERAL_ENDS, MAIN_ENDS, End, Tile


@dataclass(frozen=True, slots=True)
class Arm:
    """The outer tile of one end: the pip open to play on, and whether that tile is a double."""

    pip: int
    double: bool

    @property
    def count(self) -> int:
        # SB-5: a double at an end counts both halves
        return self.pip * 2 if self.double else self.pip


@dataclass(frozen=True, slots=True)
class Placement:
    """A tile as it lies: `inner` touches the layout (the W half for the lead), `outer` faces out."""

    inner: int
    outer: int
    end: End | None

    def __str__(self) -> str:
        return f"{self.inner}-{self.outer}"


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
        return any(e is end and (pip == tile.high or pip == tile.low) for e, pip in self.ends)

    def count(self) -> int:
        """SB-5: the sum of the open ends; a lone tile counts once, an unused lateral arm zero."""
        if len(self.placements) == 1:
            only = self.placements[0]
            return only.inner + only.outer
        return sum(arm.count for _, arm in self.arms)

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
        pip = next(p for e, p in self.ends if e is end)
        outer = tile.other(pip)
        arms = (*(a for a in self.arms if a[0] is not end), (end, Arm(outer, tile.double)))
        spinner, spinner_open = self.spinner, self.spinner_open
        if end in spinner_open:
            spinner_open = tuple(e for e in spinner_open if e is not end)
        elif tile.double and spinner is None:
            # SB-4 [ours]: a first double played later at W or E: the line occupies one main side
            spinner, spinner_open = tile.high, (end,)
        return _laid((*self.placements, Placement(pip, outer, end)), arms, spinner, spinner_open)

    def line(self, end: End) -> tuple[Placement, ...]:
        """The tiles laid on one end, from the centre outwards."""
        return tuple(p for p in self.placements if p.end is end)


def _laid(
    placements: tuple[Placement, ...],
    arms: tuple[tuple[End, Arm], ...],
    spinner: int | None,
    spinner_open: tuple[End, ...],
) -> Layout:
    ends = tuple((end, arm.pip) for end, arm in arms if end in MAIN_ENDS)
    if spinner is not None and not spinner_open:
        # SB-4: N and S open only after both main sides of the spinner are occupied
        held = dict(arms)
        ends += tuple((end, held[end].pip if end in held else spinner) for end in LATERAL_ENDS)
    return Layout(placements, arms, spinner, spinner_open, ends)
