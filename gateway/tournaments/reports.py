"""What a tournament looks like from outside, computed from a snapshot (pure): its rounds, a player's
assignment, the standings. The service turns these values into messages."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from gateway.tournaments import rounds
from gateway.tournaments.standings import F501Standing, SbStanding
from gateway.tournaments.store import Snapshot

ENDED = ("finished", "voided")


@dataclass(frozen=True, slots=True)
class RoundSummary:
    number: int
    status: str
    """scheduling (its tables are being created), scheduled (created, held until its start), playing, ended."""
    tables: int
    scheduled: int
    ended: int
    byes: tuple[str, ...]
    starts_unix_ms: int


def round_summaries(snap: Snapshot, now_unix_ms: int) -> list[RoundSummary]:
    settings, history = snap.tournament.settings(), snap.history()
    out = []
    for number in range(1, snap.tournament.current_round + 1):
        batches = [b for b in snap.batches if b.round == number]
        tables = [t for t in snap.tables if t.round == number]
        first = min(batches, key=lambda b: b.attempt)
        if any(b.status == "creating" for b in batches):
            status = "scheduling"
        elif rounds.round_state(settings, history, number) == "ended":
            status = "ended"
        else:
            status = "scheduled" if first.starts_unix_ms > now_unix_ms else "playing"
        out.append(
            RoundSummary(
                number, status, len(tables), sum(b.scheduled for b in batches),
                sum(1 for t in tables if t.status in ENDED), snap.byes.get(number, ()), first.starts_unix_ms,
            )
        )
    return out


def rounds_ended(snap: Snapshot) -> int:
    return sum(1 for r in round_summaries(snap, 0) if r.status == "ended")


@dataclass(frozen=True, slots=True)
class Assignment:
    round: int
    status: str
    """table, bye, waiting or finished."""
    match_id: str = ""
    seat: int = 0
    seat_token: str = ""
    players: tuple[str, ...] = ()
    starts_unix_ms: int = 0
    rank: int = 0


def assignment(snap: Snapshot, player: str, token: str) -> Assignment:
    """The player's table in the current round while it is being played; otherwise what comes next.
    `token` is the player's tournament token, which is also their seat token at every table of theirs (the
    seats were created with its hash), so it is handed back as the seat token as it is."""
    t = snap.tournament
    number = t.current_round
    if t.status == "finished":
        rank = next(s.rank for s in standings(snap) if s.player == player)
        return Assignment(number, "finished", rank=rank)
    if player in snap.byes.get(number, ()):
        return Assignment(number, "bye")
    mine = [x for x in snap.tables if x.round == number and player in x.players]
    if not mine:
        return Assignment(number, "waiting")
    table = max(mine, key=lambda x: x.attempt)
    if table.batch_status == "creating" or table.status in ENDED:
        return Assignment(number, "waiting", table.match_id, players=table.players)
    seat = table.players.index(player)
    batch = next(b for b in snap.batches if b.id == table.batch_id)
    return Assignment(number, "table", table.match_id, seat, token, table.players, batch.starts_unix_ms)


@dataclass(frozen=True, slots=True)
class StandingLine:
    rank: int
    player: str
    games: int
    wins: Fraction = Fraction(0)
    points: int = 0
    buchholz: Fraction = Fraction(0)
    placement_points: Fraction = Fraction(0)
    score: int = 0


def standings(snap: Snapshot) -> list[StandingLine]:
    out = []
    for s in rounds.standings(snap.tournament.settings(), snap.history()):
        if isinstance(s, SbStanding):
            out.append(StandingLine(s.rank, s.player, s.games, s.wins, s.points, s.buchholz))
        else:
            assert isinstance(s, F501Standing)
            out.append(StandingLine(s.rank, s.player, s.tables, placement_points=s.placement_points, score=s.score))
    return out
