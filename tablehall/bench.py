"""`tablehall bench engine`: random legal matches, timing `apply` on one core."""

from __future__ import annotations

import random
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from workers.games.catalog import games
from workers.games.engine import CHANCE, Game, Millis, Seat


def bench_engine(which: str, seconds: float, seed: int) -> int:
    table = Table(title="tablehall bench engine (one core)")
    for column in ("game", "matches", "applications", "apply/s", "with legal_actions + choice, /s"):
        table.add_column(column, justify="right")
    for name, game in games().items():
        if which not in ("all", name):
            continue
        matches, applied, apply_time, loop_time = _play_for(game, seconds, random.Random(seed))
        table.add_row(
            name, str(matches), str(applied), f"{applied / apply_time:,.0f}", f"{applied / loop_time:,.0f}"
        )
    Console().print(table)
    return 0


def _play_for(game: Game[Any, Any, Any], seconds: float, rng: random.Random) -> tuple[int, int, float, float]:
    """Play random legal matches for `seconds`; count and time every `apply` of a player's action."""
    seats = game.max_seats if game.name != "501" else 3
    clock = time.perf_counter
    matches = applied = 0
    apply_time = 0.0
    started = clock()
    while clock() - started < seconds:
        state = game.start(seats, {}, Seat(rng.randrange(seats)))
        now = Millis(0)
        matches += 1
        while not game.is_over(state):
            if game.needs_deal(state):
                order = list(range(game.deck_size(state)))
                rng.shuffle(order)
                state, _ = game.apply(state, CHANCE, game.deal_from(state, order), now)
                continue
            now = Millis(now + 500)
            deadline = game.next_deadline(state)
            if deadline is not None and deadline <= now:
                state, _ = game.on_deadline(state, now)
                continue
            for seat in range(seats):
                legal = [a for a in game.legal_actions(state, Seat(seat)) if a.to_json()["do"] not in _NEVER]
                if legal:
                    action = rng.choice(legal)
                    t0 = clock()
                    state, _ = game.apply(state, Seat(seat), action, now)
                    apply_time += clock() - t0
                    applied += 1
                    break
    return matches, applied, apply_time, clock() - started


_NEVER = {"resign", "abandon"}
