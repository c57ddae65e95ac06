"""Values shared by the scheduling modules."""

from __future__ import annotations

from dataclasses import dataclass

from workers.games.errors import quote

PlayerId = str


@dataclass(frozen=True, slots=True)
class SbPairing:
    """One Spectacular Bid table: `seat0` and `seat1` are the two seats of the match."""

    seat0: PlayerId
    seat1: PlayerId

    def players(self) -> frozenset[PlayerId]:
        return frozenset((self.seat0, self.seat1))


@dataclass(frozen=True, slots=True)
class Bye:
    """A player who sits out this round."""

    player: PlayerId


@dataclass(frozen=True, slots=True)
class Table501:
    """One 501♠ table of three, or four (the dealer sits out each hand); seats in the order given."""

    seats: tuple[PlayerId, ...]


def check_unique(players: tuple[PlayerId, ...] | list[PlayerId]) -> None:
    """Reject duplicate players: a schedule with a player twice is never what the caller meant."""
    seen: set[PlayerId] = set()
    for player in players:
        if player in seen:
            raise ValueError(f"player {quote(player)} appears twice")
        seen.add(player)
