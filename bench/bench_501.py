"""501♠ engine speed: legal applications per second on one core, random legal play.

    python bench/bench_501.py [seconds]

Deals and choices are drawn up front; only `apply` is timed (legal_actions is timed separately).
"""

from __future__ import annotations

import random
import sys
import time

from workers.games.engine import CHANCE, Millis, Seat
from workers.games.five_oh_one import FiveOhOne


def main() -> None:
    budget = float(sys.argv[1]) if len(sys.argv) > 1 else 5.0
    game = FiveOhOne()
    rng = random.Random(501)
    applied = 0
    apply_s = legal_s = 0.0
    games = 0
    stop = time.perf_counter() + budget
    while time.perf_counter() < stop:
        state = game.start(rng.choice((3, 4)), {}, Seat(rng.randrange(3)))
        games += 1
        while not game.is_over(state):
            if game.needs_deal(state):
                order = list(range(24))
                rng.shuffle(order)
                state, _ = game.apply(state, CHANCE, game.deal_from(state, order), Millis(0))
                continue
            seats = range(state.table.seats)
            t0 = time.perf_counter()
            choices = [(s, a) for s in seats for a in game.legal_actions(state, Seat(s))]
            t1 = time.perf_counter()
            seat, action = choices[rng.randrange(len(choices))]
            t2 = time.perf_counter()
            state, _ = game.apply(state, Seat(seat), action, Millis(0))
            t3 = time.perf_counter()
            legal_s += t1 - t0
            apply_s += t3 - t2
            applied += 1
    print(f"{applied} legal applications in {apply_s:.3f} s of apply: {applied / apply_s:,.0f}/s")
    print(f"legal_actions for every seat: {applied / legal_s:,.0f} states/s; {games} games")


if __name__ == "__main__":
    main()
