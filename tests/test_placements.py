"""Per-seat placements (issue 19): each game's `placements` against the ranking the ratings and the
tournament standings computed before it existed, over random whole matches of both games (time losses,
shared 501♠ places, voids) and the crafted records.

`ranks_before` is that ranking, copied from `ratings/rating.py` `ranks_of` and
`gateway/tournaments/results.py` `places_501` as they were when placements came in (the oracle; the
commit that added this file checked it against both on the code before placements)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tablehall.selfplay import self_play
from tests.conftest import RECORDS
from workers.games.catalog import game_named
from workers.games.engine import JSON, Placement, placed
from workers.games.records import Match


def ranks_before(game: str, outcome: dict[str, JSON]) -> tuple[int, ...]:
    """Competition ranks per seat from an outcome (1 is best; equal results share): the ranking before."""
    if game == "spectacular-bid":
        winner = outcome.get("winner")
        if not isinstance(winner, int):
            return (1, 1)
        return tuple(1 if seat == winner else 2 for seat in (0, 1))
    scores = outcome["scores"]
    flagged = outcome.get("flagged")
    key = [(1 if seat == flagged else 0, int(score)) for seat, score in enumerate(scores)]
    return tuple(1 + sum(other < mine for other in key) for mine in key)


def played(game_name: str, seed: int) -> list[Match]:
    """A random whole match (and every position on the way): bots with quick or slow thinking, so that
    some matches end on time; short games so that 501♠ scores tie now and then."""
    game = game_named(game_name)
    assert game is not None
    rng = random.Random(seed)
    if game_name == "501":
        players = ["a", "b", "c", "d"][: rng.choice([3, 4])]
        limit = rng.choice([None, 30])
        options: dict[str, JSON] = {"start_score": rng.choice([20, 40, 100]), "decision_limit_s": limit}
    else:
        players = ["a", "b"]
        options = {"start_points": rng.choice([20, 60]), "bank_s": rng.choice([10, 120])}
    think = rng.choice([(100, 4_000), (0, 16_000), (0, 36_000)])
    return [turn.match for turn in self_play(game, players, rng, options=options, think_ms=think)]


SEEDS = range(40)


def places(found: tuple[Placement, ...] | None) -> tuple[int, ...] | None:
    if found is None:
        return None
    assert [p.seat for p in found] == list(range(len(found)))  # one per seat, in seat order
    return tuple(p.place for p in found)


@pytest.mark.parametrize("game_name", ["spectacular-bid", "501"])
def test_placements_are_the_ranking_ratings_and_standings_used(game_name: str) -> None:
    game = game_named(game_name)
    assert game is not None
    reasons: set[str] = set()
    shared = 0
    for seed in SEEDS:
        history = played(game_name, seed)
        final = history[-1]
        outcome = final.outcome()
        assert outcome["status"] == "finished"
        found = game.placements(final.state)
        assert places(found) == ranks_before(game_name, outcome)
        assert found == game.placements_of(json.loads(json.dumps(outcome)))  # a stored outcome reads the same
        score = "points" if game_name == "spectacular-bid" else "scores"
        assert found is not None and [p.score for p in found] == outcome[score]
        reasons.add(str(outcome["reason"]))
        shared += len({p.place for p in found}) < len(found)
        running = [m for m in history if not m.over]
        middle = running[len(running) // 2]
        assert game.placements(middle.state) is None  # still being played: no result yet
        voided, _ = middle.void("timer_late", middle.now)
        assert game.placements(voided.state) is None and game.placements_of(voided.outcome()) is None
    assert reasons == set(game.endings) - {"resign"}  # bots never resign: the crafted records do below
    assert shared > 0 if game_name == "501" else shared == 0  # 501♠ places are shared now and then


def test_crafted_outcomes_read_back_as_the_ranking_before() -> None:
    """Every golden outcome of tests/records: ties, time losses, resignations, voids, unfinished."""
    kinds: set[tuple[str, str | None]] = set()
    for path in sorted(RECORDS.glob("*.out.json")):
        outcome: dict[str, Any] = json.loads(path.read_text())
        if "error" in outcome:
            outcome = outcome["state"]
        name = "501" if path.name.startswith("501-") else "spectacular-bid"
        game = game_named(name)
        assert game is not None
        found = game.placements_of(outcome)
        if outcome["status"] == "finished":
            assert places(found) == ranks_before(name, outcome), path.name
            kinds.add((name, outcome["reason"]))
        else:
            assert found is None, path.name
    assert {("501", "time"), ("spectacular-bid", "resign"), ("spectacular-bid", "time")} <= kinds


def test_equal_results_share_the_best_place_they_cover() -> None:
    assert places(placed([(0, -5), (0, 40), (0, -5)], [-5, 40, -5])) == (1, 3, 1)
    assert places(placed([(0, -5), (0, 40), (0, 12), (0, 40)], [-5, 40, 12, 40])) == (1, 3, 2, 3)
    assert places(placed([(1, 10), (0, 40), (0, 12)], [10, 40, 12])) == (3, 2, 1)  # out of time: last


def test_the_ranks_ratings_used_read_from_outcomes() -> None:
    """The cases ratings/rating.py tested its own `ranks_of` with, now the games' placements."""
    sb, f501 = game_named("spectacular-bid"), game_named("501")
    assert sb is not None and f501 is not None
    assert places(sb.placements_of({"status": "finished", "winner": 1, "points": [3, 0]})) == (2, 1)
    finished: dict[str, Any] = {"status": "finished"}
    assert places(f501.placements_of({**finished, "scores": [-5, 40, -5]})) == (1, 3, 1)  # exact ties share
    assert places(f501.placements_of({**finished, "scores": [-5, 40, 12, 40]})) == (1, 3, 2, 3)
    assert places(f501.placements_of({**finished, "scores": [10, 40, 12], "flagged": 0})) == (3, 2, 1)
    assert f501.placements_of({"status": "voided", "scores": [10, 40, 12]}) is None
