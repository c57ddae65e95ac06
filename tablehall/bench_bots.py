"""`tablehall bench bots`: bot levels against each other, whole matches in-process with the pure engine.

Deals come from a seeded generator (match i: seed·1,000,003 + i), so a run repeats up to the time budget.
Spectacular Bid swaps seats every other match; at 501♠ the first level takes each seat in turn against
the second level in every other seat. Each seat's bot sees only its view (`workers.bots.decide`); a
`search` bot spends `move_ms` per decision (never more than a tenth of its time left to decide). The
engine's match clock advances 1 ms per move, so no match is lost on time."""

from __future__ import annotations

import math
import multiprocessing
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from workers.bots import Budget, Level, decide
from workers.bots.budget import move_budget
from workers.games.catalog import FIVE_OH_ONE, fewest_seats, games
from workers.games.engine import CHANCE, Millis, Seat

Z95 = 1.959964
MAX_MOVES = 20_000
"""A match still running after this many moves stops unfinished (a guard: none comes close)."""


@dataclass(frozen=True, slots=True)
class Pairing:
    """Two levels to compare: `first` in one seat, `second` in every other seat."""

    first: Level
    second: Level

    @staticmethod
    def parse(text: str) -> Pairing:
        """`search:greedy` → search against greedy (ValueError for anything else)."""
        first, sep, second = text.partition(":")
        if not sep:
            raise ValueError(f"a pair is LEVEL:LEVEL, like search:greedy, not {text[:40]!r}")
        return Pairing(Level(first), Level(second))

    def __str__(self) -> str:
        return f"{self.first.value} vs {self.second.value}"


@dataclass(frozen=True, slots=True)
class Game:
    """One match to play: the game, who sits where, its deals' seed and the search's budget."""

    name: str
    levels: tuple[Level, ...]
    first: int
    """The seat of the pairing's first level."""
    seed: int
    move_ms: int
    iterations: int | None


@dataclass(frozen=True, slots=True)
class Played:
    """One match's result: each seat's place (1 best; None if it did not finish) and the moves made."""

    places: tuple[int, ...] | None
    moves: int


@dataclass(frozen=True, slots=True)
class Tally:
    """A pairing's results in one game."""

    matches: int
    wins: int
    """Matches the first level finished first in (a shared first place counts)."""
    ahead: int
    """Of each (first, second) pair of seats in each match: how often the first level placed ahead."""
    pairs: int
    moves: int
    seconds: float


def wilson(wins: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def play(match: Game) -> Played:
    """One whole match with the pure engine, each seat deciding from its own view at its level."""
    game = games()[match.name]
    seats = len(match.levels)
    deals = random.Random(match.seed)
    bots = [random.Random(match.seed * 7 + seat) for seat in range(seats)]
    state = game.start(seats, {}, Seat(0))
    now, moves = Millis(0), 0
    while not game.is_over(state) and moves < MAX_MOVES:
        if game.needs_deal(state):
            order = list(range(game.deck_size(state)))
            deals.shuffle(order)
            state, _ = game.apply(state, CHANCE, game.deal_from(state, order), now)
            continue
        now = Millis(now + 1)
        for seat in range(seats):
            view = game.view(state, Seat(seat)).to_json()
            budget = _budget(view, match)
            action = decide(view, match.levels[seat], bots[seat], budget)
            if action is not None:
                state, _ = game.apply(state, Seat(seat), game.parse_action(action), now)
                moves += 1
                break
        else:
            raise RuntimeError(f"nobody can move in a {match.name} match (seed {match.seed})")
    placements = game.placements(state)
    return Played(None if placements is None else tuple(p.place for p in placements), moves)


def _budget(view: dict[str, object], match: Game) -> Budget:
    if match.iterations is not None:
        return Budget(iterations=match.iterations)
    return move_budget(view, match.move_ms)


def schedule(name: str, pairing: Pairing, matches: int, seed: int, move_ms: int, iterations: int | None) -> list[Game]:
    """The matches of one pairing: the first level's seat rotates (swaps at two seats), the deals differ."""
    seats = fewest_seats(name)
    out = []
    for i in range(matches):
        levels = [pairing.second] * seats
        levels[i % seats] = pairing.first
        out.append(Game(name, tuple(levels), i % seats, seed * 1_000_003 + i, move_ms, iterations))
    return out


def tally(schedule: Sequence[Game], played: Sequence[Played], pairing: Pairing, seconds: float) -> Tally:
    wins = ahead = pairs = 0
    for match, result in zip(schedule, played, strict=True):
        if result.places is None:
            continue
        first = match.first
        mine = result.places[first]
        wins += mine == 1
        for seat, place in enumerate(result.places):
            if seat != first:
                pairs += 1
                ahead += mine < place
    return Tally(len(played), wins, ahead, pairs, sum(r.moves for r in played), seconds)


def bench_bots(
    which: str,
    matches: int,
    move_ms: int,
    pairs: Sequence[Pairing],
    workers: int,
    seed: int = 1,
    iterations: int | None = None,
) -> int:
    """Play every pairing in every chosen game; print wins, win rates with 95% Wilson intervals, moves/s."""
    names = [name for name in games() if which in ("all", name)]
    budget = f"{iterations} iterations" if iterations is not None else f"{move_ms} ms"
    table = Table(title=f"tablehall bench bots: {matches} matches per pairing, search budget {budget} per move")
    for column in ("game", "pairing", "matches", "wins", "win rate [95% CI]", "ahead of each other seat", "moves/s"):
        table.add_column(column, justify="right")
    context = multiprocessing.get_context("spawn")
    with context.Pool(workers) if workers > 1 else _InProcess() as pool:
        for name in names:
            for pairing in pairs:
                games_ = schedule(name, pairing, matches, seed, move_ms, iterations)
                started = time.perf_counter()
                played = pool.map(play, games_)
                result = tally(games_, played, pairing, time.perf_counter() - started)
                table.add_row(name, *_row(name, pairing, result))
    Console(width=150).print(table)
    return 0


def _row(name: str, pairing: Pairing, t: Tally) -> list[str]:
    low, high = wilson(t.wins, t.matches)
    shown = str(pairing) if name != FIVE_OH_ONE else f"{pairing.first.value} vs 2 × {pairing.second.value}"
    ahead = "—"
    if t.pairs and fewest_seats(name) > 2:
        a_low, a_high = wilson(t.ahead, t.pairs)
        ahead = f"{t.ahead}/{t.pairs} = {t.ahead / t.pairs:.0%} [{a_low:.0%}, {a_high:.0%}]"
    rate = f"{t.wins / t.matches:.0%} [{low:.0%}, {high:.0%}]" if t.matches else "—"
    return [shown, str(t.matches), str(t.wins), rate, ahead, f"{t.moves / t.seconds:,.0f}"]


class _InProcess:
    """A pool of one: `map` in this process (no workers to start for a small run)."""

    def __enter__(self) -> _InProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def map(self, fn: object, items: Sequence[Game]) -> list[Played]:
        return [play(item) for item in items]
