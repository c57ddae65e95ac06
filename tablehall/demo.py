"""`tablehall demo`: bots play a match, shown turn by turn (layout, count, transfers, clocks)."""

from __future__ import annotations

import json
import random
import secrets
import time
from pathlib import Path
from typing import Any

from rich.console import Console

from tablehall.selfplay import self_play
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID, game_named
from workers.games.engine import Event, seconds

NAMES = ["Ana", "Bia", "Caio", "Duda"]


def run_demo(
    game_name: str, players: int | None, seed: int | None, pace: float, greedy: bool, record: Path | None
) -> int:
    game = game_named(game_name)
    assert game is not None
    count = players or game.min_seats
    if not game.min_seats <= count <= game.max_seats:
        Console(stderr=True).print(f"{game_name} takes {game.min_seats} to {game.max_seats} players")
        return 2
    rng: random.Random = secrets.SystemRandom() if seed is None else random.Random(seed)
    names = NAMES[:count]
    # random 501♠ bidders overbid and every score drifts up: its bots play the greedy heuristic
    smart = greedy or game_name == FIVE_OH_ONE
    console = Console()
    console.rule(f"[bold]{game_name}[/]: {' vs '.join(names)}")
    last = None
    for turn in self_play(game, names, rng, greedy=[smart] * count):
        last = turn
        for event in turn.events:
            line = _narrate(event, names)
            if line:
                console.print(line)
        if turn.seat is not None or any(e.kind in _BOARD_AFTER for e in turn.events):
            console.print(_board(game.view(turn.match.state, None).to_json(), names, turn.match.now), style="dim")
        if pace:
            time.sleep(pace)
    assert last is not None
    console.rule("result")
    console.print_json(json.dumps(last.match.outcome()))
    if record is not None:
        record.write_text(json.dumps(last.match.record(), indent=1))
        console.print(f"record written to {record}")
    return 0


_BOARD_AFTER = {"flag", "clocks_started"}


def _narrate(event: Event, names: list[str]) -> str | None:
    who = names[event.seat] if event.seat is not None and event.seat >= 0 else "table"
    facts = dict(event.facts)
    kind = event.kind
    if kind == "play" and "count" in facts:
        where = f" at {facts['end']}" if facts.get("end") else " (lead)"
        scored = f" → [green]+{facts['scored']}[/]" if facts.get("scored") else ""
        return f"[bold]{who}[/] plays {facts['tile']}{where}; ends count {facts['count']}{scored}"
    if kind == "draw":
        return f"{who} draws ({facts.get('left')} left in the boneyard)"
    if kind == "pass":
        return f"{who} passes" + (" (cannot play or draw)" if facts.get("forced") else "")
    if kind == "deal":
        number = f" {facts['round']}" if "round" in facts else ""
        dealer = f", {names[event.seat]} deals" if event.seat is not None and event.seat >= 0 else ""
        return f"[bold cyan]— deal{number}{dealer} —[/]"
    details = ", ".join(f"{k} {v}" for k, v in facts.items() if v is not None)
    return f"{who}: {kind}{' (' + details + ')' if details else ''}"


def _board(view: dict[str, Any], names: list[str], now: int) -> str:
    if view.get("game") == SPECTACULAR_BID:
        layout = view["layout"]
        lines = layout["lines"]
        west = " ".join(_flip(t) for t in reversed(lines["W"]))
        east = " ".join(lines["E"])
        centre = f"[{layout['lead']}]" if layout["lead"] else "(empty)"
        arms = "".join(f"  {end}: {' '.join(lines[end])}" for end in ("N", "S") if lines[end])
        banks = []
        for seat, bank in enumerate(view["banks_ms"]):
            if view["clock_running"] == seat and view["decision_since_ms"] is not None:
                over = max(0, now - view["decision_since_ms"] - view["delay_ms"])
                bank = max(0, bank - over)
            banks.append(f"{names[seat]} {view['points'][seat]} pts {seconds(bank):.1f}s")
        return f"   {west} {centre} {east}{arms}   | count {layout['count']} | " + " · ".join(banks)
    return "   " + _table_501(view, names)


def _table_501(view: dict[str, Any], names: list[str]) -> str:
    scores = " · ".join(f"{names[seat]} {score}" for seat, score in enumerate(view["scores"]))
    parts = [scores]
    if view.get("declarer") is not None and view.get("trump"):
        parts.append(f"{names[view['declarer']]} {view['target']} in {view['trump']}")
    if view.get("trick"):
        parts.append("trick " + " ".join(f"{names[c['seat']]}:{c['card']}" for c in view["trick"]))
    return " | ".join(parts)


def _flip(tile: str) -> str:
    a, _, b = tile.partition("-")
    return f"{b}-{a}"

