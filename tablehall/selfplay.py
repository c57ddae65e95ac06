"""Bots playing whole matches through the engine interface: for the demo, the benchmark and tests.

Deals come from the random source the caller passes: the demo passes a CSPRNG
(`secrets.SystemRandom`), tests and benchmarks a seeded `random.Random` so runs repeat.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from workers.games.engine import JSON, Event, Game, Millis, Seat
from workers.games.records import Match

Policy = Callable[[Game[Any, Any, Any], Any, Seat, Sequence[Any], random.Random, Millis], Any]


def random_policy(
    game: Game[Any, Any, Any], state: Any, seat: Seat, legal: Sequence[Any], rng: random.Random, now: Millis
) -> Any:
    """Any legal action but resigning, uniformly."""
    return rng.choice(legal)


def greedy_policy(
    game: Game[Any, Any, Any], state: Any, seat: Seat, legal: Sequence[Any], rng: random.Random, now: Millis
) -> Any:
    """The action after which this seat stands best (ties at random): prefers scoring plays and low bids."""
    best: list[Any] = []
    best_score = None
    for action in legal:
        after, _ = game.apply(state, seat, action, now)
        score = _standing(game, after, seat, now)
        if best_score is None or score > best_score:
            best, best_score = [action], score
        elif score == best_score:
            best.append(action)
    return rng.choice(best)


def _standing(game: Game[Any, Any, Any], state: Any, seat: Seat, now: Millis) -> float:
    """Higher is better: a Spectacular Bid balance, or minus a 501 score."""
    outcome = game.outcome(state, now)
    if isinstance(outcome.get("points"), list):
        return float(outcome["points"][seat])
    scores = outcome.get("scores")
    return -float(scores[seat]) if isinstance(scores, list) else 0.0


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
    policies: Sequence[Policy] | None = None,
    think_ms: tuple[int, int] = (200, 3000),
    max_steps: int = 100_000,
) -> Iterator[Turn]:
    """Play a match to its end, yielding every step. Bots never resign; deals are drawn from `rng`."""
    lot = Seat(rng.randrange(len(players)))
    match = Match.start(game, players, options, lot)
    policies = policies or [random_policy] * len(players)
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
        for seat in map(Seat, range(len(players))):
            legal = [a for a in game.legal_actions(match.state, seat) if a.to_json()["do"] not in _NEVER]
            if legal:
                action = policies[seat](game, match.state, seat, legal, rng, now)
                match, events = match.apply(seat, action, now)
                yield Turn(match, seat, action, events)
                break
        else:
            deadline = game.next_deadline(match.state)
            if deadline is None:
                return
            now = Millis(max(now, deadline))
    raise RuntimeError(f"self-play did not finish in {max_steps} steps")


_NEVER = {"resign", "abandon"}
