"""Property tests over random legal Spectacular Bid matches from random deals (hypothesis)."""

from __future__ import annotations

import json
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tablehall.selfplay import self_play
from tests.sb import GAME
from workers.games.engine import Seat
from workers.games.records import Match, replay
from workers.games.spectacular_bid.state import Phase, State
from workers.games.spectacular_bid.tiles import TILES

matches = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "shared_device": st.booleans(),
        "slow": st.booleans(),
        "greedy": st.booleans(),
        "start_points": st.sampled_from([150, 150, 60, 25]),
    }
)


def play(case: dict[str, object]) -> list[Match]:
    rng = random.Random(case["seed"])  # type: ignore[arg-type]
    options = {"shared_device": case["shared_device"], "start_points": case["start_points"]}
    think = (0, 16_000) if case["slow"] else (100, 4_000)
    greedy = [bool(case["greedy"]), False]
    steps = self_play(GAME, ["A", "B"], rng, options=options, think_ms=think, greedy=greedy)
    return [turn.match for turn in steps]


def hidden_from(state: State, seat: int | None) -> set[str]:
    """Tiles `seat` may not see now (spectator: None), written both ways round, quoted as in JSON."""
    round = state.round if state.round is not None else (state.past[-1] if state.past else None)
    if round is None:  # between rounds the one just ended is still on the table
        return set()
    hidden = set(round.boneyard)
    for owner in (0, 1):
        if owner != seat:
            hidden |= round.hands[owner]
    return {f'"{t.high}-{t.low}"' for t in hidden} | {f'"{t.low}-{t.high}"' for t in hidden}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(matches)
def test_random_legal_matches_terminate_conserve_points_and_account_for_every_tile(case: dict[str, object]) -> None:
    history = play(case)
    assert history and history[-1].over
    total = 2 * case["start_points"]  # type: ignore[operator]
    for match in history:
        state: State = match.state
        assert sum(state.points) == total and min(state.points) >= 0
        if state.round is not None:
            round = state.round
            laid = [p for p in round.layout.placements]
            held = [*round.hands[0], *round.hands[1], *round.boneyard]
            assert len(held) + len(laid) == len(TILES)
            assert len(set(held)) == len(held)
            laid_tiles = {(max(p.inner, p.outer), min(p.inner, p.outer)) for p in laid}
            assert len(laid_tiles) == len(laid)
            assert laid_tiles.isdisjoint({(t.high, t.low) for t in held})
    final = history[-1].state
    assert final.phase is Phase.OVER and final.winner in (0, 1) and final.reason in ("points", "time")
    assert final.reason in GAME.endings  # the engine's own list (the metrics export each at 0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(matches)
def test_no_view_ever_carries_a_hidden_tile(case: dict[str, object]) -> None:
    for match in play(case):
        for seat in (0, 1, None):
            view = GAME.view(match.state, None if seat is None else Seat(seat))
            wire = json.dumps(view.to_json())
            leaked = [t for t in hidden_from(match.state, seat) if t in wire]
            assert not leaked, f"seat {seat} sees {leaked}"
            assert 'boneyard"' not in wire  # only its size is shown


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(matches)
def test_replaying_a_matchs_record_gives_its_outcome(case: dict[str, object]) -> None:
    match = play(case)[-1]
    record = json.loads(json.dumps(match.record()))
    assert replay(record).to_json() == match.outcome()


def test_a_voided_match_replays_as_voided() -> None:
    history = play({"seed": 7, "shared_device": False, "slow": False, "greedy": False, "start_points": 150})
    match = history[len(history) // 2]
    voided, _ = match.void("timer_late", match.now)
    outcome = replay(json.loads(json.dumps(voided.record()))).to_json()
    assert outcome == voided.outcome()
    assert outcome["status"] == "voided" and outcome["void_reason"] == "timer_late"
