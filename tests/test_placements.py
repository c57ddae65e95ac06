"""Per-seat placements (issue 19): each game's `placements` against the ranking the ratings and the
tournament standings computed before it existed, over random whole matches of both games (time losses,
shared 501♠ places, voids) and the crafted records.

`ranks_before` is that ranking, copied from `ratings/rating.py` `ranks_of` and
`gateway/tournaments/results.py` `places_501` as they were when placements came in (the oracle)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tablehall.selfplay import self_play
from tests.conftest import RECORDS
from workers.games.catalog import game_named
from workers.games.engine import JSON
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
        options: dict[str, JSON] = {"start_score": rng.choice([20, 40, 100]), "decision_limit_s": rng.choice([None, 30])}
    else:
        players = ["a", "b"]
        options = {"start_points": rng.choice([20, 60]), "bank_s": rng.choice([10, 120])}
    think = rng.choice([(100, 4_000), (0, 16_000)])
    return [turn.match for turn in self_play(game, players, rng, options=options, think_ms=think)]


SEEDS = range(40)


@pytest.mark.parametrize("game_name", ["spectacular-bid", "501"])
def test_the_oracle_is_what_ratings_and_standings_computed(game_name: str) -> None:
    """Run on main before placements: the copied ranking agrees with both of the old places."""
    from gateway.tournaments.results import places_501
    from ratings.rating import ranks_of

    for seed in SEEDS:
        final = played(game_name, seed)[-1].outcome()
        if final["status"] != "finished":
            continue
        assert ranks_before(game_name, final) == ranks_of(game_name, final)
        if game_name == "501":
            assert list(ranks_before(game_name, final)) == places_501(final)


def crafted() -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted(RECORDS.glob("*.json")) if not p.name.endswith(".out.json")]
