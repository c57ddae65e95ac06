"""Standings for both games. Exact arithmetic (Fraction) so shared points never round.

Spectacular Bid, best first by:
1. wins — a win 1, a loss 0, a bye 1; a voided table counted as a draw gives both ½;
2. points — the sum of net points, final balance − the starting balance (150 unless the tournament's
   options set `start_points`) per game, so a bye or a voided table adds 0 and a player's points are what
   they took from opponents;
3. Buchholz — the sum of the final wins of every opponent met (byes add nothing);
4. head-to-head — among the players still tied, wins in the games they played against each other;
5. player id, ascending — the last resort, so the order is total and stable.

501♠, best first by:
1. placement points — at a table of k players, place p (1 = best) earns 3·(k − p)/(k − 1): a table of
   three gives 3, 1½, 0 and a table of four 3, 2, 1, 0, so first is always 3, last always 0 and every
   table averages 1½ whichever size it had; players sharing a rank share the points of the places they
   cover equally (two tied first at a table of three get 2¼ each); a bye earns 1½ (the table average);
2. total score, lower is better — the sum of final residuals over finished tables (byes and voided
   tables add nothing);
3. player id, ascending.

Voided tables: `voided="replay"` leaves them out entirely (the organizer replays them; they are not
games the players met in), `voided="draw"` counts them as a draw (Spectacular Bid: ½ win each, 0 points,
the opponents count for Buchholz; 501♠: everyone at the table shares all places, 1½ each).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from gateway.tournaments.model import PlayerId
from workers.games.errors import quote

Voided = Literal["replay", "draw"]
SB_START = 150
HALF = Fraction(1, 2)


@dataclass(frozen=True, slots=True)
class SbResult:
    """A finished (or voided) Spectacular Bid table."""

    seat0: PlayerId
    seat1: PlayerId
    winner: PlayerId | None  # None only when voided
    balances: tuple[int, int]  # final balances of seat0, seat1
    voided: bool = False

    def __post_init__(self) -> None:
        if not self.voided and self.winner not in (self.seat0, self.seat1):
            raise ValueError("a finished table needs a winner from its own seats")


@dataclass(frozen=True, slots=True)
class SbStanding:
    rank: int  # 1-based, distinct (the tie-breaks end at the player id)
    player: PlayerId
    wins: Fraction
    points: int
    buchholz: Fraction
    games: int


def _check_voided(voided: str) -> None:
    if voided not in ("replay", "draw"):
        raise ValueError(f"voided must be 'replay' or 'draw', not {quote(voided)}")


def standings_sb(
    players: Iterable[PlayerId],
    results: Sequence[SbResult],
    byes: Iterable[PlayerId] = (),
    voided: Voided = "replay",
    start: int = SB_START,
) -> tuple[SbStanding, ...]:
    """Spectacular Bid standings. `byes` lists one entry per bye received (a player may repeat); `start`
    is the starting balance net points are counted from."""
    _check_voided(voided)
    ids = list(players)
    wins: dict[PlayerId, Fraction] = {p: Fraction(0) for p in ids}
    points: dict[PlayerId, int] = dict.fromkeys(ids, 0)
    games: dict[PlayerId, int] = dict.fromkeys(ids, 0)
    opponents: dict[PlayerId, list[PlayerId]] = {p: [] for p in ids}
    mutual: dict[tuple[PlayerId, PlayerId], Fraction] = {}  # (a, b): a's wins against b
    for player in byes:
        wins[player] += 1
    for r in results:
        if r.voided and voided == "replay":
            continue
        pair = (r.seat0, r.seat1)
        for me, other in (pair, pair[::-1]):
            opponents[me].append(other)
            games[me] += 1
            if r.voided:
                gained = HALF
            else:
                gained = Fraction(1 if r.winner == me else 0)
                points[me] += (r.balances[0] if me == r.seat0 else r.balances[1]) - start
            wins[me] += gained
            mutual[(me, other)] = mutual.get((me, other), Fraction(0)) + gained
    buchholz = {p: sum((wins[o] for o in opponents[p]), Fraction(0)) for p in ids}
    primary = sorted(ids, key=lambda p: (-wins[p], -points[p], -buchholz[p], p))
    ordered: list[PlayerId] = []
    start = 0
    while start < len(primary):
        key = (wins[primary[start]], points[primary[start]], buchholz[primary[start]])
        end = start
        while end < len(primary) and (wins[primary[end]], points[primary[end]], buchholz[primary[end]]) == key:
            end += 1
        tied = primary[start:end]
        head = {p: sum((mutual.get((p, o), Fraction(0)) for o in tied if o != p), Fraction(0)) for p in tied}
        ordered.extend(sorted(tied, key=lambda p: (-head[p], p)))
        start = end
    return tuple(SbStanding(rank, p, wins[p], points[p], buchholz[p], games[p]) for rank, p in enumerate(ordered, 1))


@dataclass(frozen=True, slots=True)
class F501Result:
    """A finished (or voided) 501♠ table: each player's place (1 = best, equal places shared) and residual."""

    places: Mapping[PlayerId, int]
    scores: Mapping[PlayerId, int]
    voided: bool = False

    def __post_init__(self) -> None:
        if not 3 <= len(self.places) <= 4:
            raise ValueError("a 501♠ table has three or four players")
        if not self.voided and set(self.scores) != set(self.places):
            raise ValueError("a finished table needs a score for every player")


@dataclass(frozen=True, slots=True)
class F501Standing:
    rank: int
    player: PlayerId
    placement_points: Fraction
    score: int
    tables: int


BYE_501 = Fraction(3, 2)


def placement_points(places: Mapping[PlayerId, int]) -> dict[PlayerId, Fraction]:
    """Points for one table; a shared place shares the points of the places it covers."""
    k = len(places)
    value = [Fraction(3 * (k - p), k - 1) for p in range(1, k + 1)]
    ordered = sorted(places.values())
    out: dict[PlayerId, Fraction] = {}
    for player, place in places.items():
        first = ordered.index(place)  # 0-based first position this place covers
        count = ordered.count(place)
        out[player] = sum(value[first : first + count], Fraction(0)) / count
    return out


def standings_501(
    players: Iterable[PlayerId],
    results: Sequence[F501Result],
    byes: Iterable[PlayerId] = (),
    voided: Voided = "replay",
) -> tuple[F501Standing, ...]:
    _check_voided(voided)
    ids = list(players)
    pts: dict[PlayerId, Fraction] = {p: Fraction(0) for p in ids}
    score: dict[PlayerId, int] = dict.fromkeys(ids, 0)
    tables: dict[PlayerId, int] = dict.fromkeys(ids, 0)
    for player in byes:
        pts[player] += BYE_501
    for r in results:
        if r.voided and voided == "replay":
            continue
        places = dict.fromkeys(r.places, 1) if r.voided else dict(r.places)
        for player, gained in placement_points(places).items():
            pts[player] += gained
            tables[player] += 1
            if not r.voided:
                score[player] += r.scores[player]
    ordered = sorted(ids, key=lambda p: (-pts[p], score[p], p))
    return tuple(F501Standing(rank, p, pts[p], score[p], tables[p]) for rank, p in enumerate(ordered, 1))
