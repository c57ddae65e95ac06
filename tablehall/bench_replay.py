"""The reference-equivalent figure of `tablehall bench engine`: recorded matches applied from their start.

The records are played once by the self-play bots with fixed seeds (untimed; the same records in every
run) and read back as a replay reads them: each match becomes its script, the deals (as chance steps)
and the players' commands in the order `workers.games.records.replay` applies them. The timed loop then
starts each match afresh and applies its script through the engine's `apply`, settling any deadline due
first as a replay does. Every script is checked once against `replay` of its record, so the figure is
for matches that end as recorded.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tablehall.bots import choose
from workers.games.catalog import FIVE_OH_ONE
from workers.games.engine import CHANCE, JSON, Game, Millis, Seat, millis
from workers.games.records import Match, replay

RECORDS = 12
"""Matches recorded per game: bots alternately random and greedy; every third 501♠ table has four."""
MAX_STEPS = 100_000


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
        seats = 4 if game.name == FIVE_OH_ONE and i % 3 == 2 else game.min_seats
        out.append(_bot_match(game, seats, random.Random(seed * 1000 + i), greedy=i % 2 == 1).record())
    return out


def _bot_match(game: Game[Any, Any, Any], seats: int, rng: random.Random, greedy: bool) -> Match:
    """A match played to its end by the self-play bots (`tablehall.selfplay`), each reading its view's legal
    actions in a fixed order: 501♠ lists a hand's plays in set order, which follows the cards' identities,
    so the same seed would not give the same match in every process."""
    match = Match.start(game, [f"P{s}" for s in range(seats)], {}, Seat(rng.randrange(seats)))
    now = Millis(0)
    for _ in range(MAX_STEPS):
        if match.over:
            return match
        if game.needs_deal(match.state):
            order = list(range(game.deck_size(match.state)))
            rng.shuffle(order)
            match, _ = match.deal(game.deal_from(match.state, order), now)
            continue
        now = Millis(now + rng.randint(200, 3000))  # within every clock's delay: no deadline passes
        match, _ = match.advance(now)
        for seat in map(Seat, range(seats)):
            chosen = choose(_steady(game.view(match.state, seat).to_json()), rng, greedy)
            if chosen is not None:
                match, _ = match.apply(seat, game.parse_action(chosen), now)
                break
        else:
            raise RuntimeError(f"{game.name}: no bot has anything to do")
    raise RuntimeError(f"{game.name}: a bot match did not end in {MAX_STEPS} steps")


def _steady(view: dict[str, JSON]) -> dict[str, JSON]:
    """The view with its legal actions (and Spectacular Bid's counts, one per action) in a fixed order."""
    legal = view.get("legal", [])
    order = sorted(range(len(legal)), key=lambda i: json.dumps(legal[i], sort_keys=True))
    steady = {**view, "legal": [legal[i] for i in order]}
    if "counts" in view:
        steady["counts"] = [view["counts"][i] for i in order]
    return steady


def script(game: Game[Any, Any, Any], record: Mapping[str, JSON]) -> Script:
    """The steps `replay` applies for `record` (a match without a void), in its order: a deal whenever one
    is due, then each command."""
    deals = iter(game.parse_deal(raw) for raw in record[game.deals_key])
    commands = []
    t = Millis(0)
    for event in record["events"]:
        t = millis(event["t"]) if "t" in event else t  # an event without a time has its predecessor's
        commands.append((Seat(event["seat"]), game.parse_action(event), t))
    lot = game.parse_lot(record)
    match = Match.start(game, record["players"], record.get("options", {}), lot)
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
    end = millis(record["end_t"]) if record.get("end_t") is not None else match.now
    return Script(len(record["players"]), record.get("options", {}), lot, tuple(steps), end, replay(record).outcome)


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
