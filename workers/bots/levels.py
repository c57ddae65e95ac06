"""The bot levels and the one entry every caller uses: `decide(view, level, rng, budget)`."""

from __future__ import annotations

import random
from enum import Enum

from workers.bots.budget import Budget
from workers.bots.policy import Action, View, choose
from workers.bots.search import search


class Level(Enum):
    """How strong a bot plays: uniformly random, today's greedy heuristic, or ISMCTS over sampled deals."""

    RANDOM = "random"
    GREEDY = "greedy"
    SEARCH = "search"


def decide(view: View, level: Level, rng: random.Random, budget: Budget | None = None) -> Action | None:
    """One action for the seat whose view this is (from `view["legal"]`), or None when it has nothing to do.

    Works only from the view: the same view, level, seed and iteration budget give the same action."""
    if level is Level.SEARCH:
        return search(view, rng, budget or Budget())
    return choose(view, rng, greedy=level is Level.GREEDY)
