"""`tablehall bench engine`: random legal matches, timing `apply` on one core; and recorded matches replayed."""

from __future__ import annotations

import random
import time
from typing import Any

from rich.console import Console
from rich.table import Table

from tablehall.bench_replay import replay_for
from workers.games.catalog import games
from workers.games.engine import CHANCE, Millis, Rules, Seat


def bench_engine(which: str, seconds: float, seed: int) -> int:
    """Per game: random legal matches (apply alone, and with legal_actions and the choice), then the
    reference-equivalent figure: recorded matches applied from their start (`bench_replay`)."""
    table = Table(title="tablehall bench engine (one core)")
    for column in ("game", "matches", "applications", "apply/s", "with legal_actions + choice, /s"):
        table.add_column(column, justify="right")
    recorded = Table(title="recorded matches applied from their start, deals included (one core)")
    for column in ("game", "matches", "applications", "applications/s", "per CPU second"):
        recorded.add_column(column, justify="right")
    for name, game in games().items():
        if which not in ("all", name):
            continue
        matches, applied, apply_time, loop_time = _play_for(game, seconds, random.Random(seed))
        table.add_row(
            name, str(matches), str(applied), f"{applied / apply_time:,.0f}", f"{applied / loop_time:,.0f}"
        )
        fig = replay_for(game, seconds, seed)
        recorded.add_row(
            name, str(fig.matches), str(fig.applications), f"{fig.applications / fig.wall:,.0f}",
            f"{fig.applications / fig.cpu:,.0f}",
        )
    Console().print(table)
    Console().print(recorded)
    return 0


def _play_for(game: Rules[Any, Any, Any], seconds: float, rng: random.Random) -> tuple[int, int, float, float]:
    """Play random legal matches for `seconds`; count and time every `apply` of a player's action.

    A choice is drawn by index from each seat's legal actions (501♠'s declarations are a lazy sequence
    of tens of thousands); resigning and abandoning are redrawn. Random 501♠ bidders rarely make a
    contract, so scores drift up: a match stops after `MAX_STEPS` actions, finished or not.
    """
    seats = game.min_seats
    clock = time.perf_counter
    matches = applied = 0
    apply_time = 0.0
    started = clock()
    while clock() - started < seconds:
        state = game.start(seats, {}, Seat(rng.randrange(seats)))
        now = Millis(0)
        matches += 1
        for _ in range(MAX_STEPS):
            if game.is_over(state):
                break
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
            seat, action = _choice(game, state, seats, rng)
            t0 = clock()
            state, _ = game.apply(state, seat, action, now)
            apply_time += clock() - t0
            applied += 1
    return matches, applied, apply_time, clock() - started


def _choice(game: Rules[Any, Any, Any], state: Any, seats: int, rng: random.Random) -> tuple[Seat, Any]:
    options = [(Seat(s), legal) for s in range(seats) if _playable(legal := game.legal_actions(state, Seat(s)))]
    seat, legal = options[rng.randrange(len(options))]
    while True:
        action = legal[rng.randrange(len(legal))]
        if action.to_json()["do"] not in _NEVER:
            return seat, action


def _playable(legal: Any) -> bool:
    """Whether `legal` holds anything but resigning or abandoning (without listing a lazy sequence)."""
    return len(legal) > len(_NEVER) or any(a.to_json()["do"] not in _NEVER for a in legal)


MAX_STEPS = 2_000
_NEVER = {"resign", "abandon"}
