"""The games this service hosts, by their record name. Each game carries its match options (`Game.options`:
names, ranges, defaults, declared once in the game's `options.py`); everything else reads them from here."""

from __future__ import annotations

from functools import cache
from typing import Any

from workers.games.engine import Game


@cache
def games() -> dict[str, Game[Any, Any, Any]]:
    """Each game's engine, made once (engines hold no state)."""
    from workers.games.five_oh_one import FiveOhOne
    from workers.games.spectacular_bid import SpectacularBid

    found: dict[str, Game[Any, Any, Any]] = {SpectacularBid.name: SpectacularBid()}
    found[FiveOhOne.name] = FiveOhOne()
    return found


def game_named(name: str) -> Game[Any, Any, Any] | None:
    return games().get(name)
