"""SB-4 (the layout and its one spinner) and SB-5 (counting the ends), on the pure layout value."""

from __future__ import annotations

import pytest

from tests.sb import layout_of
from workers.games.spectacular_bid.tiles import End, Tile


def ends(layout) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {end.value: pip for end, pip in layout.open_ends()}


def test_sb5_worked_example_counts() -> None:
    # SB-5: lead [5|5] → 10; [5|3] at E → 13; [5|2] at W → 5; [5|6] at N → 11
    assert layout_of("5-5").count() == 10
    assert layout_of("5-5", "5-3 E").count() == 13
    assert layout_of("5-5", "5-3 E", "5-2 W").count() == 5
    assert layout_of("5-5", "5-3 E", "5-2 W", "5-6 N").count() == 11


def test_lone_lead_double_counts_once_and_is_the_spinner() -> None:
    layout = layout_of("6-6")
    assert layout.count() == 12
    assert layout.spinner == 6
    assert ends(layout) == {"W": 6, "E": 6}


def test_lone_non_double_lead_counts_both_halves() -> None:
    assert layout_of("6-4").count() == 10
    assert ends(layout_of("6-4")) == {"W": 6, "E": 4}


def test_zero_zero_lead_scores_nothing() -> None:
    layout = layout_of("0-0")
    assert layout.count() == 0


def test_spinner_with_one_side_covered_counts_both_halves_and_laterals_stay_closed() -> None:
    layout = layout_of("6-6", "6-4 E")
    assert layout.count() == 12 + 4
    assert not layout.laterals_open
    assert ends(layout) == {"W": 6, "E": 4}
    assert not layout.fits(Tile.parse("6-1"), End.N)
    assert not layout.fits(Tile.parse("6-1"), End.S)


def test_spinner_with_both_sides_covered_counts_nothing_and_opens_laterals() -> None:
    layout = layout_of("6-6", "6-4 E", "6-1 W")
    assert layout.count() == 1 + 4
    assert layout.laterals_open
    assert ends(layout) == {"W": 1, "E": 4, "N": 6, "S": 6}
    assert layout.fits(Tile.parse("6-2"), End.N) and layout.fits(Tile.parse("6-2"), End.S)


def test_unused_lateral_counts_zero_and_used_one_counts_its_outer_pip() -> None:
    layout = layout_of("6-6", "6-4 E", "6-1 W", "6-2 N")
    assert layout.count() == 1 + 4 + 2
    assert ends(layout) == {"W": 1, "E": 4, "N": 2, "S": 6}
    layout = layout.place(Tile.parse("6-3"), End.S)
    assert layout.count() == 1 + 4 + 2 + 3


@pytest.mark.parametrize("end", ["W", "E"])
def test_first_double_played_later_at_a_main_end_becomes_the_spinner(end: str) -> None:
    # SB-4 [ours]: the line occupies one main side; the other is the new end of the line
    lead = "3-5"  # W shows 3, E shows 5
    pip = 3 if end == "W" else 5
    other = 5 if end == "W" else 3
    layout = layout_of(lead, f"{pip}-{pip} {end}")
    assert layout.spinner == pip
    assert not layout.laterals_open
    assert layout.count() == 2 * pip + other  # the spinner at an end counts both halves
    covered = layout.place(Tile(pip, 0) if pip > 0 else Tile(1, 0), End(end))
    assert covered.laterals_open
    assert covered.count() == 0 + other
    assert dict(covered.open_ends())[End.N] == pip


def test_later_doubles_never_branch_and_count_both_halves_at_w_and_e() -> None:
    layout = layout_of("6-6", "6-4 E", "4-4 E")
    assert layout.spinner == 6
    assert layout.count() == 12 + 8  # W is still the spinner; E is a later double
    layout = layout.place(Tile.parse("6-2"), End.W)
    assert layout.count() == 2 + 8
    assert set(ends(layout)) == {"W", "E", "N", "S"}  # only the spinner's arms: no arms off 4-4
    layout = layout.place(Tile.parse("2-2"), End.W)
    assert layout.count() == 4 + 8


@pytest.mark.parametrize("end", ["N", "S"])
def test_later_doubles_count_both_halves_on_a_lateral_arm(end: str) -> None:
    layout = layout_of("5-5", "5-3 E", "5-2 W", f"5-1 {end}", f"1-1 {end}")
    assert layout.count() == 2 + 3 + 2
    assert ends(layout)[end] == 1


def test_a_tile_that_fits_no_named_end_does_not_fit() -> None:
    layout = layout_of("6-4")
    assert layout.fits(Tile.parse("6-1"), End.W)
    assert not layout.fits(Tile.parse("6-1"), End.E)
    assert not layout.fits(Tile.parse("2-1"), End.W)
    assert not layout.fits(Tile.parse("6-1"), End.N)
