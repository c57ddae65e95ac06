"""`tablehall bench views`: one view's cost in one process, typed (views.proto) against the JSON it
replaces, on every position of self-played matches (each seat and a spectator): building it (build),
wrapping it in an Update and a Play event and serializing that (wrap+encode: the service's side), the bytes
sent, and a client's side (parse; parse+dict: `as_dict` of the typed view against `json.loads`)."""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.table import Table

from protos.tablehall.v1 import matches_pb2
from tablehall.selfplay import self_play
from workers.games.catalog import games
from workers.games.engine import Seat
from workers.typed_views import FIELDS, as_dict, typed_view


def bench_views(which: str, matches: int, seed: int) -> int:
    table = Table(title=f"tablehall bench views (one process; µs per view, {matches} self-played matches a game)")
    for column in ("view", "views", "build", "wrap+encode", "bytes", "parse", "parse+dict"):
        table.add_column(column, justify="right")
    for name, game in games().items():
        if which not in ("all", name):
            continue
        views = _views(game, matches, random.Random(seed))
        for form, row in (("JSON", _json_row(views)), ("typed", _typed_row(name, views))):
            table.add_row(f"{form} {name}", str(len(views)), *row)
    Console().print(table)
    return 0


def _views(game: Any, matches: int, rng: random.Random) -> list[Any]:
    players = [f"P{i}" for i in range(game.min_seats)]
    views = []
    for _ in range(matches):
        for turn in self_play(game, players, rng):
            views += [game.view(turn.match.state, seat) for seat in [*map(Seat, range(len(players))), None]]
    return views


def _per_view(work: Callable[[], object], count: int) -> float:
    """The best of three runs, in µs per view (the machine is shared: the least disturbed run)."""
    best = float("inf")
    for _ in range(3):
        started = time.process_time()
        work()
        best = min(best, time.process_time() - started)
    return best / count * 1e6


def _json_row(views: list[Any]) -> list[str]:
    texts = [json.dumps(v.to_json(), separators=(",", ":")) for v in views]
    wire = [matches_pb2.PlayEvent(update=matches_pb2.Update(seq=1, view_json=t)).SerializeToString() for t in texts]
    n = len(views)
    return [
        f"{_per_view(lambda: [json.dumps(v.to_json(), separators=(',', ':')) for v in views], n):.1f}",
        f"{_per_view(lambda: [_event(matches_pb2.Update(seq=1, view_json=t)) for t in texts], n):.1f}",
        f"{sum(map(len, wire)) / n:,.0f}",
        f"{_per_view(lambda: [matches_pb2.PlayEvent.FromString(b) for b in wire], n):.1f}",
        f"{_per_view(lambda: [json.loads(matches_pb2.PlayEvent.FromString(b).update.view_json) for b in wire], n):.1f}",
    ]


def _typed_row(name: str, views: list[Any]) -> list[str]:
    field = FIELDS[name]
    typed = [typed_view(name, v) for v in views]
    wire = [_event(_update(field, m)) for m in typed]
    n = len(views)
    return [
        f"{_per_view(lambda: [typed_view(name, v) for v in views], n):.1f}",
        f"{_per_view(lambda: [_event(_update(field, m)) for m in typed], n):.1f}",
        f"{sum(map(len, wire)) / n:,.0f}",
        f"{_per_view(lambda: [matches_pb2.PlayEvent.FromString(b) for b in wire], n):.1f}",
        f"{_per_view(lambda: [_dict(field, b) for b in wire], n):.1f}",
    ]


def _dict(field: str, wire: bytes) -> dict[str, Any]:
    return as_dict(getattr(matches_pb2.PlayEvent.FromString(wire).update, field))


def _update(field: str, typed: Any) -> matches_pb2.Update:
    update = matches_pb2.Update(seq=1)
    getattr(update, field).CopyFrom(typed)
    return update


def _event(update: matches_pb2.Update) -> bytes:
    return matches_pb2.PlayEvent(update=update).SerializeToString()
