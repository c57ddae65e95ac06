"""What the search needs of a game, seen from one seat: worlds consistent with its view, and moves in them.

Each game's implementation (`sb_worlds`, `five_worlds`) builds real engine states with the pure engine and
plays in them with the engine's own legal actions and `apply`; the search never sees the hidden state."""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence
from typing import Any, Protocol

from workers.games.engine import Seat

State = Any
Move = Hashable
"""An engine action (frozen, hashable): the key of a search node's child."""


class Worlds(Protocol):
    """One seat's information set in one game."""

    @property
    def seat(self) -> Seat:
        """The observer: the seat whose view this is."""
        ...

    @property
    def seats(self) -> int: ...

    def root_moves(self) -> Sequence[tuple[Move, dict[str, Any]]]:
        """The seat's choices now, each engine action with the `view["legal"]`-shaped action it sends."""
        ...

    def sample(self, rng: random.Random) -> State:
        """A full hidden state consistent with everything the view shows (`rng` decides the hidden part)."""
        ...

    def to_move(self, state: State) -> Seat | None:
        """Who decides next in `state`, or None at the search's horizon (the round or hand is over)."""
        ...

    def moves(self, state: State, seat: Seat) -> Sequence[Move]:
        """`seat`'s legal actions in `state` as the tree branches on them (wide ranges thinned)."""
        ...

    def apply(self, state: State, seat: Seat, move: Move) -> State: ...

    def rollout_move(self, state: State, seat: Seat, rng: random.Random) -> Move:
        """The playout policy's move (greedy)."""
        ...

    def values(self, state: State) -> Sequence[float]:
        """Each seat's reward in [0, 1] at the horizon: 1 a won match, else its share of what the round moved."""
        ...
