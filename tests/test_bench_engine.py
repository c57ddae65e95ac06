"""`tablehall bench engine`'s reference-equivalent figure: recorded matches applied from their start."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tablehall.bench_replay import Script, apply_script, checked, recorded, replay_for, script
from workers.games.catalog import game_named, games

EXAMPLES = Path(__file__).parent / "examples"


@pytest.mark.parametrize("name", ["sb-opening", "501-seed-example"])
def test_a_recorded_match_applied_from_its_start_ends_as_its_replay(name: str) -> None:
    record = json.loads((EXAMPLES / f"{name}.json").read_text())
    game = game_named(record["game"])
    assert game is not None
    steps = script(game, record)
    assert len(steps.steps) == len(record["events"]) + len(record[game.deals_key])
    assert checked(game, steps) is steps
    assert game.outcome(apply_script(game, steps), steps.end) == steps.outcome


def test_a_script_that_leaves_out_a_step_is_refused() -> None:
    record = json.loads((EXAMPLES / "501-seed-example.json").read_text())  # its last play ends the hand
    game = game_named(record["game"])
    assert game is not None
    whole = script(game, record)
    cut = Script(whole.seats, whole.options, whole.lot, whole.steps[:-1], whole.end, whole.outcome)
    with pytest.raises(AssertionError):
        checked(game, cut)


@pytest.mark.parametrize("name", sorted(games()))
def test_bot_records_are_the_same_in_every_run_and_finished(name: str) -> None:
    game = games()[name]
    first = recorded(game, seed=3, count=2)
    assert recorded(game, seed=3, count=2) == first
    for record in first:
        assert checked(game, script(game, record)).outcome["status"] == "finished"


def test_the_figure_counts_every_application_of_whole_rounds() -> None:
    game = games()["spectacular-bid"]
    per_round = sum(len(script(game, r).steps) for r in recorded(game, seed=1))
    figure = replay_for(game, seconds=0.0, seed=1)
    assert figure.applications == per_round and figure.matches == 12
    assert figure.wall > 0 and figure.cpu > 0
