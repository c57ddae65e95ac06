"""The games this service hosts, by their record name: the one place game names, seat counts and match
options are looked up (the command line's choices and help, error messages, metrics labels, benches).

Each game declares its own name and options once, in its package (`Game.name`, `Game.options`: names,
ranges, defaults in the game's `options.py`); everything else reads them from here."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any, Final

from workers.games.engine import Game
from workers.games.errors import quote
from workers.games.five_oh_one import FiveOhOne
from workers.games.spectacular_bid import SpectacularBid

SPECTACULAR_BID: Final = SpectacularBid.name
"""The two-player Fives duel: the default game wherever one is chosen."""
FIVE_OH_ONE: Final = FiveOhOne.name
"""The trick-taking game for three (four with a sitting-out dealer)."""


@cache
def games() -> dict[str, Game[Any, Any, Any]]:
    """Each game's engine by name, made once (engines hold no state), the default game first."""
    return {SPECTACULAR_BID: SpectacularBid(), FIVE_OH_ONE: FiveOhOne()}


def game_named(name: str) -> Game[Any, Any, Any] | None:
    return games().get(name)


def names() -> tuple[str, ...]:
    """Every game's name, the default first: what a `--game` flag accepts."""
    return tuple(games())


def listed() -> str:
    """The names in words, for messages: "spectacular-bid or 501"."""
    return _in_words(names())


def unknown_game(name: str) -> str:
    """The message that refuses a game name nobody hosts (and says which ones are)."""
    return f"unknown game {quote(name)}: {listed()}"


def fewest_seats(name: str) -> int:
    """The smallest table `name` is played at (a duel's two, 501♠'s three)."""
    return games()[name].min_seats


def seat_counts(name: str) -> str:
    """The table sizes `name` is played at, in words for help texts: "3 or 4"."""
    game = games()[name]
    return _in_words([str(n) for n in range(game.min_seats, game.max_seats + 1)])


def option_default(name: str, option: str) -> str:
    """The default of one of a game's match options as help texts show it: "120" (seconds), "501", "off"."""
    spec = next(spec for spec in games()[name].options if spec.name == option)
    return spec.default_text().removesuffix(" s")


def _in_words(items: Sequence[str]) -> str:
    """Items in words: "a", "a or b", "a, b or c"."""
    return ", ".join(items[:-1]) + f" or {items[-1]}" if len(items) > 1 else items[0]
