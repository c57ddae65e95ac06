"""The pure scheduling core of tournaments: pairings, 501♠ table seating and standings.

No I/O, no clock, no randomness: every function is a deterministic function of its arguments, with
ties broken by the order players are given in (their seeding) and then by player id, as each module
documents. The gateway stores tournaments and creates the matches; this package only decides who sits where.
"""

from gateway.tournaments.model import Bye, PlayerId, SbPairing, Table501
from gateway.tournaments.round_robin import round_robin
from gateway.tournaments.seating import seat_501, table_sizes_501
from gateway.tournaments.standings import (
    F501Result,
    F501Standing,
    SbResult,
    SbStanding,
    Voided,
    standings_501,
    standings_sb,
)
from gateway.tournaments.swiss import SwissPlayer, SwissRound, pair_swiss

__all__ = [
    "Bye",
    "F501Result",
    "F501Standing",
    "PlayerId",
    "SbPairing",
    "SbResult",
    "SbStanding",
    "SwissPlayer",
    "SwissRound",
    "Table501",
    "Voided",
    "pair_swiss",
    "round_robin",
    "seat_501",
    "standings_501",
    "standings_sb",
    "table_sizes_501",
]
