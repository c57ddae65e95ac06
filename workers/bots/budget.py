"""What one search decision may spend: iterations and/or time on an injected clock."""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Budget:
    """What one `search` decision may spend: at most `iterations`, and/or until `clock()` passes `seconds`.

    Tests give iterations only (deterministic); a live bot gives seconds and the clock (injected)."""

    iterations: int | None = 400
    seconds: float | None = None
    clock: Callable[[], float] = time.monotonic

    def deadline(self) -> float | None:
        """The instant of `clock` at which the search stops, None without a time limit."""
        return None if self.seconds is None else self.clock() + self.seconds

    def share(self, part: float) -> Budget:
        """The `part` (0..1) of this budget, on the same clock: for a decision spent in two steps."""
        iterations = None if self.iterations is None else max(1, math.ceil(self.iterations * part))
        return Budget(iterations, None if self.seconds is None else self.seconds * part, self.clock)

    def spent(self, done: int, deadline: float | None) -> bool:
        """True once `done` iterations reach the count or the clock reaches `deadline` (from `deadline()`)."""
        return (self.iterations is not None and done >= self.iterations) or (
            deadline is not None and self.clock() >= deadline
        )


SAFE_SHARE = 0.1
"""The share of the time left to decide (delay plus bank, or 501♠'s decision limit) one move may spend."""


def move_budget(
    view: dict[str, object], move_ms: int, clock: Callable[[], float] = time.monotonic, iterations: int | None = None
) -> Budget:
    """A per-move budget of `move_ms` that respects the clock: never more than `SAFE_SHARE` of the time the
    view shows this seat has for the decision (`deadline_ms - decision_since_ms`), when a clock runs."""
    seconds = move_ms / 1000
    deadline, since = view.get("deadline_ms"), view.get("decision_since_ms")
    if view.get("clock_running") == view.get("seat") and isinstance(deadline, int) and isinstance(since, int):
        seconds = min(seconds, max(0, deadline - since) * SAFE_SHARE / 1000)
    return Budget(iterations=iterations, seconds=seconds, clock=clock)
