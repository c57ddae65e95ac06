"""A tournament's next step, decided from its history alone (pure: the director stores and sends).

- Formats: `round-robin` and `swiss` for Spectacular Bid, `seating` (tables of three or four) for 501♠.
  Default rounds: a full round robin (n − 1, or n when n is odd); Swiss ⌈log2 n⌉; seating 3.
- Ranking for pairing: round 1 by seed; later rounds by the current standings (their tie-breaks).
- A round has ended when every table's latest attempt has ended and, with `voided="replay"`, no voided
  table has replays left (MAX_REPLAYS per table): a voided table is played again by the same players at
  the same table number (attempt 1, 2, ...); if the replays are voided too, the table is left out.
  With `voided="draw"` a voided table counts as a draw at once and nothing is replayed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gateway.tournaments.errors import BatchRejected
from gateway.tournaments.model import PlayerId
from gateway.tournaments.round_robin import round_robin
from gateway.tournaments.seating import seat_501
from gateway.tournaments.standings import (
    F501Result,
    F501Standing,
    SbResult,
    SbStanding,
    Voided,
    standings_501,
    standings_sb,
)
from gateway.tournaments.swiss import SwissPlayer, pair_swiss
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID, fewest_seats, unknown_game
from workers.games.engine import Placement
from workers.games.errors import quote

FORMATS = {SPECTACULAR_BID: ("swiss", "round-robin"), FIVE_OH_ONE: ("seating",)}
MAX_REPLAYS = 2
MAX_PLAYERS = 10_000
TIE_BREAKS = {
    SPECTACULAR_BID: "wins (a bye 1, a voided table counted as a draw ½), then net points (final balance − 150 "
    "per game), then Buchholz (the opponents' wins), then head-to-head among those still tied, then name",
    FIVE_OH_ONE: "placement points (first 3 … last 0 at every table, shared places share, a bye 1½), then total "
    "final score (lower first), then name",
}


@dataclass(frozen=True, slots=True)
class Settings:
    game: str
    format: str
    rounds: int
    voided: Voided
    players: tuple[PlayerId, ...]
    """Seeding order, best first."""
    start_points: int = 150
    """Spectacular Bid's starting balance (net points are counted from it)."""


@dataclass(frozen=True, slots=True)
class PlayedTable:
    round: int
    table: int
    attempt: int
    players: tuple[PlayerId, ...]
    status: str
    """playing, finished or voided."""
    placements: tuple[Placement, ...] | None = None
    """Per seat, once the table finished with a result (the engine's `placements`)."""


@dataclass(frozen=True, slots=True)
class History:
    tables: tuple[PlayedTable, ...] = ()
    byes: Mapping[int, tuple[PlayerId, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Plan:
    tables: tuple[tuple[PlayerId, ...], ...]
    byes: tuple[PlayerId, ...]


def default_rounds(format: str, players: int) -> int:
    if format == "round-robin":
        return players - 1 if players % 2 == 0 else players
    if format == "swiss":
        return max(1, math.ceil(math.log2(players)))
    return 3


def check_settings(game: str, format: str, rounds: int, players: Sequence[str]) -> int:
    """The rounds to play (`rounds` 0: the default), or `BatchRejected` with the reason."""
    formats = FORMATS.get(game)
    if formats is None:
        raise BatchRejected(unknown_game(game))
    if format not in formats:
        raise BatchRejected(f"{game} tournaments are {' or '.join(formats)}, not {quote(format)}")
    least = fewest_seats(game)
    if not least <= len(players) <= MAX_PLAYERS:
        raise BatchRejected(f"a {game} tournament takes {least} to {MAX_PLAYERS} players, not {len(players)}")
    seen: set[str] = set()
    for seed, name in enumerate(players, 1):
        if not name.strip() or len(name) > 64:
            raise BatchRejected(f"player {seed}: a name of 1 to 64 characters, not {quote(name)}")
        if name in seen:
            raise BatchRejected(f"player {quote(name)} is listed twice (seed {seed}); nothing was created")
        seen.add(name)
    most = default_rounds(format, len(players)) if format == "round-robin" else 100
    if format == "swiss":
        most = len(players) - 1  # beyond that a repeat pairing is unavoidable
    if rounds == 0:
        return default_rounds(format, len(players))
    if not 1 <= rounds <= most:
        raise BatchRejected(f"a {format} of {len(players)} players has 1 to {most} rounds, not {rounds}")
    return rounds


def latest(history: History, number: int) -> dict[int, PlayedTable]:
    """Each table of a round at its newest attempt."""
    out: dict[int, PlayedTable] = {}
    for t in history.tables:
        if t.round == number and (t.table not in out or t.attempt > out[t.table].attempt):
            out[t.table] = t
    return out


def to_replay(settings: Settings, history: History, number: int) -> list[PlayedTable]:
    """Voided tables of an otherwise ended round to play again (policy `replay`, replays left)."""
    if settings.voided != "replay":
        return []
    return [t for t in latest(history, number).values() if t.status == "voided" and t.attempt < MAX_REPLAYS]


def round_state(settings: Settings, history: History, number: int) -> str:
    """`playing` (a table is still on), `replay` (voided tables to play again) or `ended`."""
    tables = latest(history, number)
    if any(t.status == "playing" for t in tables.values()):
        return "playing"
    return "replay" if to_replay(settings, history, number) else "ended"


def _ended(history: History) -> list[PlayedTable]:
    return sorted((t for t in history.tables if t.status in ("finished", "voided")),
                  key=lambda t: (t.round, t.table, t.attempt))  # fmt: skip


def _byes(history: History) -> list[PlayerId]:
    return [p for number in sorted(history.byes) for p in history.byes[number]]


def sb_results(history: History) -> list[SbResult]:
    """Duels: the winner is the seat placed first, the balances are the final scores."""
    out = []
    for t in _ended(history):
        if t.status == "voided" or t.placements is None:
            out.append(SbResult(t.players[0], t.players[1], None, (0, 0), voided=True))
        else:
            first, second = t.placements
            winner = t.players[first.seat if first.place == 1 else second.seat]
            out.append(SbResult(t.players[0], t.players[1], winner, (first.score, second.score)))
    return out


def f501_results(history: History) -> list[F501Result]:
    out = []
    for t in _ended(history):
        if t.status == "voided" or t.placements is None:
            out.append(F501Result(dict.fromkeys(t.players, 1), {}, voided=True))
        else:
            placed = {t.players[p.seat]: p for p in t.placements}
            out.append(F501Result({k: p.place for k, p in placed.items()}, {k: p.score for k, p in placed.items()}))
    return out


def standings(settings: Settings, history: History) -> tuple[SbStanding, ...] | tuple[F501Standing, ...]:
    """Seated tables rank by placement points; duels (Swiss, round robin) by wins."""
    if settings.format == "seating":
        return standings_501(settings.players, f501_results(history), _byes(history), settings.voided)
    return standings_sb(settings.players, sb_results(history), _byes(history), settings.voided, settings.start_points)


def plan(settings: Settings, history: History, number: int) -> Plan:
    """Who sits where in round `number` (1-based)."""
    if settings.format == "round-robin":
        rr = round_robin(settings.players)[number - 1]
        return Plan(tuple((p.seat0, p.seat1) for p in rr.pairings), (rr.bye.player,) if rr.bye else ())
    ranked = list(settings.players) if number == 1 else [s.player for s in standings(settings, history)]
    byes: dict[PlayerId, int] = {}
    for player in _byes(history):
        byes[player] = byes.get(player, 0) + 1
    if settings.format == "seating":
        seating = seat_501(ranked, byes)
        return Plan(tuple(t.seats for t in seating.tables), tuple(b.player for b in seating.byes))
    swiss = pair_swiss(_swiss_players(settings, history, ranked, byes))
    return Plan(tuple((p.seat0, p.seat1) for p in swiss.pairings), (swiss.bye.player,) if swiss.bye else ())


def _swiss_players(
    settings: Settings, history: History, ranked: list[PlayerId], byes: dict[PlayerId, int]
) -> list[SwissPlayer]:
    table = standings_sb(settings.players, sb_results(history), _byes(history), settings.voided, settings.start_points)
    wins = {s.player: s.wins for s in table}
    opponents: dict[PlayerId, set[PlayerId]] = {p: set() for p in ranked}
    seats: dict[PlayerId, list[int]] = {p: [] for p in ranked}
    for r in sb_results(history):
        if r.voided and settings.voided == "replay":
            continue  # left out: the two did not meet
        for seat, (me, other) in enumerate(((r.seat0, r.seat1), (r.seat1, r.seat0))):
            opponents[me].add(other)
            seats[me].append(seat)
    return [
        SwissPlayer(
            p, float(wins[p]), frozenset(opponents[p]), byes.get(p, 0),
            seats[p].count(0), seats[p].count(1), seats[p][-1] if seats[p] else None,
        )
        for p in ranked
    ]
