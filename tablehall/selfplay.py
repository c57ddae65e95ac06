"""Bots playing whole matches through the engine interface, locally: for the demo and for tests.

Each seat is the same view-based bot that plays over the network (`tablehall.bots.choose`): it sees only
its own view. Deals come from the random source the caller passes: the demo passes a CSPRNG
(`secrets.SystemRandom`), tests a seeded `random.Random` so runs repeat.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tablehall.bots import choose
from workers.games.engine import JSON, Event, Game, Millis, Seat
from workers.games.records import Match


@dataclass(frozen=True, slots=True)
class Turn:
    """One step of a self-played match: who acted (None for a deal or a deadline) and what happened."""

    match: Match
    seat: Seat | None
    action: Any
    events: tuple[Event, ...]


def self_play(
    game: Game[Any, Any, Any],
    players: Sequence[str],
    rng: random.Random,
    *,
    options: Mapping[str, JSON] | None = None,
    greedy: Sequence[bool] | None = None,
    think_ms: tuple[int, int] = (200, 3000),
    max_steps: int = 100_000,
) -> Iterator[Turn]:
    """Play a match to its end, yielding every step. Bots never resign; deals are drawn from `rng`."""
    seats = [Seat(s) for s in range(len(players))]
    greedy = greedy if greedy is not None else [False] * len(players)
    match = Match.start(game, players, options, Seat(rng.randrange(len(players))))
    now = Millis(0)
    for _ in range(max_steps):
        if match.over:
            return
        if game.needs_deal(match.state):
            order = list(range(game.deck_size(match.state)))
            rng.shuffle(order)
            match, events = match.deal(game.deal_from(match.state, order), now)
            yield Turn(match, None, None, events)
            continue
        now = Millis(now + rng.randint(*think_ms))
        match, events = match.advance(now)
        if events:
            yield Turn(match, None, None, events)
            continue
        for seat in seats:
            chosen = choose(game.view(match.state, seat).to_json(), rng, greedy[seat])
            if chosen is not None:
                action = game.parse_action(chosen)
                match, events = match.apply(seat, action, now)
                yield Turn(match, seat, action, events)
                break
        else:
            deadline = game.next_deadline(match.state)
            if deadline is None:
                return
            now = Millis(max(now, deadline))
    raise RuntimeError(f"self-play did not finish in {max_steps} steps")
