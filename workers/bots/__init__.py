"""Practice bots at three levels, deciding from a seat's view JSON alone (never the hidden state).

`decide(view, level, rng, budget)` is the one entry; `tablehall bot` runs it over the service, the
benches in-process. The search level's determinizations live beside it (`sb_worlds`, `five_worlds`)."""

from workers.bots.budget import Budget
from workers.bots.levels import Level, decide
from workers.bots.policy import Action, View, choose, declaration, is_over

__all__ = ["Action", "Budget", "Level", "View", "choose", "decide", "declaration", "is_over"]
