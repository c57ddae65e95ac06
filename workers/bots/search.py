"""Information-set Monte Carlo tree search (placeholder until the search lands: plays greedy)."""

from __future__ import annotations

import random

from workers.bots.budget import Budget
from workers.bots.policy import Action, View, choose


def search(view: View, rng: random.Random, budget: Budget) -> Action | None:
    """The search level's decision; for now the greedy one."""
    return choose(view, rng, greedy=True)
