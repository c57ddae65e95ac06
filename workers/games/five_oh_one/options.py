"""501♠'s match options, declared once: names, ranges and defaults (docs/RULES.md, GetRules).

The seed gives 501♠ no clock; the decision limit is ours, off unless set. Its range (5 s to an hour)
keeps it something a player can meet; scores from 20 (a short game) to 1001 (a long one).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from workers.games.engine import JSON, Millis, millis
from workers.games.options import Kind, OptionSpec, read_options
from workers.games.values import pickled_by_constructor

NAME = "501"
"""The game's name in records, views and the API, declared once (`FiveOhOne.name`; the catalog reads it)."""

OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec("start_score", Kind.WHOLE, 501, "Everyone's score at the start, counted down to zero (F-1).", 20, 1001),
    OptionSpec(
        "decision_limit_s",
        Kind.SECONDS,
        None,
        "Time for each decision; who lets it run out loses the game, ranked last.",
        5,
        3600,
    ),
)


@pickled_by_constructor
@dataclass(frozen=True, slots=True)
class Chosen:
    """A game's options as the rules use them."""

    start_score: int
    limit: Millis | None
    """The per-decision time limit, None when off."""


def parse(raw: Mapping[str, JSON]) -> Chosen:
    """The options of a new game (or a record), each checked against its range in `OPTIONS`."""
    chosen = read_options(OPTIONS, raw, NAME)
    start, limit = chosen["start_score"], chosen["decision_limit_s"]
    assert isinstance(start, int) and not isinstance(start, bool)
    assert limit is None or (isinstance(limit, int | float) and not isinstance(limit, bool))
    return Chosen(start, None if limit is None else millis(limit))
