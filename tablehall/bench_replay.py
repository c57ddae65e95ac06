"""The reference-equivalent figure of `tablehall bench engine`: recorded matches applied from their start.

The records are played once by the self-play bots with fixed seeds (untimed) and read back as a replay
reads them: each match becomes its script, the deals (as chance steps) and the players' commands in the
order `workers.games.records.replay` applies them. The timed loop then starts each match afresh and
applies its script through the engine's `apply`, settling any deadline due first as a replay does.
Every script is checked once against `replay` of its record, so the figure is for matches that end as
recorded.
"""

from __future__ import annotations

import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tablehall.selfplay import self_play
from workers.games.engine import CHANCE, JSON, Game, Millis, Seat, millis
from workers.games.records import Match, replay

RECORDS = 12
"""Matches recorded per game: bots alternately random and greedy; every third 501♠ table has four."""


@dataclass(frozen=True, slots=True)
class Script:
    """A recorded match as a replay applies it: (seat, action or deal, arrival time), in order."""

    seats: int
    options: Mapping[str, JSON]
    lot: Seat
    steps: tuple[tuple[Seat, Any, Millis], ...]
    end: Millis
    outcome: dict[str, JSON]


@dataclass(frozen=True, slots=True)
class Figure:
    matches: int
    applications: int
    wall: float
    cpu: float


def recorded(game: Game[Any, Any, Any], seed: int, count: int = RECORDS) -> list[dict[str, JSON]]:
    """`count` records of whole matches played by bots with fixed seeds (the same records every run)."""
    out = []
    for i in range(count):
        seats = 4 if game.name == "501" and i % 3 == 2 else max(game.min_seats, 2)
        players = [f"P{s}" for s in range(seats)]
        rng = random.Random(seed * 1000 + i)
        last = None
        for turn in self_play(game, players, rng, greedy=[i % 2 == 1] * seats):
            last = turn
        assert last is not None
        out.append(last.match.record())
    return out


def script(game: Game[Any, Any, Any], record: Mapping[str, JSON]) -> Script:
    """The steps `replay` applies for `record`, in its order: a deal whenever one is due, then each command."""
    deals = iter(game.parse_deal(raw) for raw in record[game.deals_key])
    commands = [(Seat(e["seat"]), game.parse_action(e), millis(e["t"])) for e in record["events"]]
    lot = game.parse_lot(record)
    match = Match.start(game, record["players"], record["options"], lot)
    steps: list[tuple[Seat, Any, Millis]] = []

    def dealt(match: Match, t: Millis) -> Match:
        while game.needs_deal(match.state) and (deal := next(deals, None)) is not None:
            match, _ = match.deal(deal, t)
            steps.append((CHANCE, deal, t))
        return match

    match = dealt(match, Millis(0))
    for seat, action, t in commands:
        match, _ = match.advance(t)
        match = dealt(match, t)
        match, _ = match.apply(seat, action, t)
        steps.append((seat, action, t))
        match = dealt(match, t)
    end = millis(record["end_t"])
    return Script(len(record["players"]), record["options"], lot, tuple(steps), end, replay(record).outcome)


def apply_script(game: Game[Any, Any, Any], script: Script) -> Any:
    """The match replayed from its start: every step through `apply`, deadlines due settled first."""
    state = game.start(script.seats, script.options, script.lot)
    for seat, action, t in script.steps:
        deadline = game.next_deadline(state)
        if deadline is not None and deadline <= t:
            state, _ = game.on_deadline(state, t)
        state, _ = game.apply(state, seat, action, t)
    return state


def checked(game: Game[Any, Any, Any], script: Script) -> Script:
    """`script` if applying it ends the match as `replay` of its record does; else an error."""
    state = apply_script(game, script)
    deadline = game.next_deadline(state)
    if deadline is not None and deadline <= script.end:
        state, _ = game.on_deadline(state, script.end)
    if game.outcome(state, script.end) != script.outcome:
        raise AssertionError(f"{game.name}: applying a recorded match does not end as its replay")
    return script


def replay_for(game: Game[Any, Any, Any], seconds: float, seed: int) -> Figure:
    """Apply the recorded matches from their start, round after round, for about `seconds` (at least once)."""
    scripts = [checked(game, script(game, record)) for record in recorded(game, seed)]
    per_round = sum(len(s.steps) for s in scripts)
    rounds = 0
    wall, cpu = time.perf_counter(), time.process_time()
    started = wall
    while rounds == 0 or time.perf_counter() - started < seconds:
        for s in scripts:
            apply_script(game, s)
        rounds += 1
    return Figure(rounds * len(scripts), rounds * per_round, time.perf_counter() - wall, time.process_time() - cpu)
