"""A round's layout laid again from what a view shows of it: the lead, each end's line and the spinner.

For players who plan from a view (the search bot's sampled worlds): the view does not tell in which order
the ends were played, and the layout does not depend on it except for which double became the spinner,
which the view names."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workers.games.errors import MalformedAction
from workers.games.spectacular_bid.layout import Layout
from workers.games.spectacular_bid.tiles import MAIN_ENDS, End, Tile


def laid(lead: str | None, lines: Mapping[str, Sequence[str]], spinner: int | None) -> Layout:
    """The layout whose view shows `lead` ("W-E" halves), each end's tiles from the centre out ("inner-outer")
    and `spinner`: the lead first, the double that became the spinner before any other double, then the rest
    of the main line, then the lateral arms."""
    if lead is None:
        return Layout()
    west, east = _halves(lead)
    layout = Layout().lead(Tile.parse(lead), west)
    if spinner is None or (west == east == spinner):
        steps = [(end, tile) for end in MAIN_ENDS for tile in lines.get(end.value, ())]
    else:
        first = _spinner_first(lines, spinner)
        steps = [*first, *((e, t) for e in MAIN_ENDS for t in lines.get(e.value, ()) if (e, t) not in first)]
    steps += [(end, tile) for end in (End.N, End.S) for tile in lines.get(end.value, ())]
    for end, text in steps:
        inner, _ = _halves(text)
        if layout.pip_at(end) != inner:
            raise MalformedAction(f"{text} does not fit the {end.value} end of this layout")
        layout = layout.place_on(Tile.parse(text), end, inner)
    return layout


def _spinner_first(lines: Mapping[str, Sequence[str]], spinner: int) -> list[tuple[End, str]]:
    """The main line's tiles up to and including the double `spinner-spinner`, on the end that holds it."""
    double = f"{spinner}-{spinner}"
    for end in MAIN_ENDS:
        line = list(lines.get(end.value, ()))
        if double in line:
            return [(end, tile) for tile in line[: line.index(double) + 1]]
    raise MalformedAction(f"the spinner {spinner} is on neither main end")


def _halves(text: str) -> tuple[int, int]:
    a, _, b = text.partition("-")
    return int(a), int(b)
