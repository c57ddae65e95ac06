"""The games this service hosts, by their record name."""

from __future__ import annotations

from typing import Any

from workers.games.engine import Game


def games() -> dict[str, Game[Any, Any, Any]]:
    from workers.games.five_oh_one import FiveOhOne
    from workers.games.spectacular_bid import SpectacularBid

    found: dict[str, Game[Any, Any, Any]] = {SpectacularBid.name: SpectacularBid()}
    found[FiveOhOne.name] = FiveOhOne()
    return found


def game_named(name: str) -> Game[Any, Any, Any] | None:
    return games().get(name)
