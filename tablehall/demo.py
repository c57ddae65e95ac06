"""`tablehall demo`: bots play a match, told move by move in the table's own words, at a pace a person can follow.

Spectacular Bid: each play with the layout, its ends and count and what it took, draws, the lead auction and
what was paid, the clocks; 501♠: bids, the contract and the talon, marriages, every card and trick. Each round
or hand ends on its summary (held a little longer), and the match on its result, with the players' names.
`--pace 0` never pauses; `--json` prints only the outcome (the record's, as `tablehall replay` does).
The story comes from seat 0's view through the same narrator the terminal client uses
(`tablehall/summaries.py`); seat 0's hand itself is never shown.
"""

from __future__ import annotations

import json
import random
import secrets
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from tablehall.render import clock_line, end_values, layout_lines
from tablehall.selfplay import Turn, self_play
from tablehall.summaries import Narrator
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID, game_named
from workers.games.engine import Seat

NAMES = ["Ana", "Bia", "Caio", "Duda"]
SUMMARY_PAUSES = 5
"""A summary stays on screen this many paces before play goes on."""


def run_demo(
    game_name: str,
    players: int | None,
    seed: int | None,
    pace: float,
    greedy: bool,
    record: Path | None,
    as_json: bool = False,
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
    console = Console(highlight=False)
    turns = self_play(game, names, rng, greedy=[smart] * count)
    last = _quiet(turns) if as_json else _tell(console, turns, game, names, pace)
    if as_json:
        print(json.dumps(last.match.outcome(), indent=2))
    if record is not None:
        record.write_text(json.dumps(last.match.record(), indent=1))
        (Console(stderr=True) if as_json else console).print(f"record written to {record}", markup=False)
    return 0


def _quiet(turns: Iterator[Turn]) -> Turn:
    last: Turn | None = None
    for turn in turns:
        last = turn
    assert last is not None
    return last


def _tell(console: Console, turns: Iterator[Turn], game: Any, names: Sequence[str], pace: float) -> Turn:
    title = "Spectacular Bid" if game.name == SPECTACULAR_BID else "501♠"
    console.rule(f"[bold]{title}[/]: {' vs '.join(names)}")
    console.print(_opening(game.name, pace), style="dim", markup=False)
    narrator = Narrator(names)
    last: Turn | None = None
    for turn in turns:
        last = turn
        view = game.view(turn.match.state, Seat(0)).to_json()
        told = narrator.see(view)
        for line in told.lines:
            console.print(line, markup=False)
        if told.lines and view.get("game") == SPECTACULAR_BID and _played(told.lines):
            for line in _table(view, names, turn.match.now):
                console.print(line, style="dim", markup=False)
        if told.summary:
            console.print()
            for line in told.summary:
                console.print(line, style="bold", markup=False)
            console.print()
        _pause(pace * (SUMMARY_PAUSES if told.summary else 1) if told.lines or told.summary else 0)
    assert last is not None
    return last


def _opening(game: str, pace: float) -> str:
    how = f"one move every {pace:g} s" if pace else "no pauses"
    if game == SPECTACULAR_BID:
        what = "Every play counts the open ends; a multiple of 5 takes that many points from the other player."
    else:
        what = "Each hand: bidding, the talon and the contract, eight tricks; scores count down to zero."
    return f"{what} Bots play both sides, {how} (--pace 0: none; Ctrl-C stops)."


def _played(lines: Sequence[str]) -> bool:
    return any(" play" in line and "count" in line for line in lines)


def _table(view: dict[str, Any], names: Sequence[str], now: float) -> list[str]:
    """The layout, its ends and count, and the clocks, as they stand after a play."""
    layout = [line.strip() for line in layout_lines(view["layout"]) if "spinner:" not in line]
    if not end_values(view["layout"]):
        return layout
    *tiles, ends = layout
    return [f"   {line}" for line in tiles] + [f"   {ends} · {clock_line(view, names, now)}"]


def _pause(seconds: float) -> None:
    if seconds > 0:
        time.sleep(seconds)
