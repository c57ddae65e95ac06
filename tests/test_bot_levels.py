"""Bot levels (`workers.bots.decide`): a decision depends only on the seat's view; the search level never
answers an illegal action and stays within its budget (iterations, or an injected clock); a search bot
plays a whole match over real gRPC."""

from __future__ import annotations

import asyncio
import itertools
import random
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tablehall.bots import run_bot
from tablehall.cli import parser
from tablehall.client import Client
from tablehall.selfplay import self_play
from tests.test_bots import serve
from workers.bots import Budget, Level, choose, decide
from workers.bots.budget import move_budget
from workers.bots.five_worlds import FiveWorlds, best_target
from workers.bots.sb_worlds import SbWorlds
from workers.bots.search import ismcts
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID, games
from workers.games.engine import Seat
from workers.games.five_oh_one.state import Bidding, Contract
from workers.games.values import evolve

ITERATIONS = 25
SHORT = {SPECTACULAR_BID: {"start_points": 40}, FIVE_OH_ONE: {"start_score": 120}}


def positions(name: str, seed: int) -> Iterator[tuple[Any, Seat]]:
    """Every state of a greedy self-played match where a seat has a decision of its own to make."""
    game = games()[name]
    seats = game.min_seats
    for turn in self_play(game, [str(s) for s in range(seats)], random.Random(seed), options=SHORT[name],
                          greedy=[True] * seats):  # fmt: skip
        state = turn.match.state
        for seat in map(Seat, range(seats)):
            view = game.view(state, seat).to_json()
            if view.get("turn") == seat and len([a for a in view["legal"] if a["do"] not in ("resign", "abandon")]) > 1:
                yield state, seat


def hidden_swapped(name: str, state: Any, seat: Seat, rng: random.Random) -> Any:
    """The same state with every card or tile the seat cannot see dealt again among the places it cannot see."""
    if name == SPECTACULAR_BID:
        round = state.round
        pool = [*round.hands[1 - seat], *round.boneyard]
        rng.shuffle(pool)
        theirs, bone = frozenset(pool[: len(round.hands[1 - seat])]), tuple(pool[len(round.hands[1 - seat]) :])
        hands = (round.hands[0], theirs) if seat == 0 else (theirs, round.hands[1])
        return evolve(state, round=evolve(round, hands=hands, boneyard=bone))
    hand = state.hand
    others = [s for s in range(len(hand.hands)) if s != seat]
    hidden_talon = isinstance(hand, Bidding)
    pool = [c for s in others for c in hand.hands[s]] + (list(hand.talon) if hidden_talon else [])
    rng.shuffle(pool)
    hands = list(hand.hands)
    for s in others:
        hands[s], pool = frozenset(pool[: len(hand.hands[s])]), pool[len(hand.hands[s]) :]
    changes: dict[str, Any] = {"hands": tuple(hands)}
    if hidden_talon:
        changes["talon"] = tuple(pool)
    return evolve(state, hand=evolve(hand, **changes))


def sample(name: str, seed: int, pick: int) -> tuple[Any, Seat]:
    found = list(positions(name, seed))
    return found[pick % len(found)]


@settings(max_examples=12, deadline=None)
@given(name=st.sampled_from([SPECTACULAR_BID, FIVE_OH_ONE]), seed=st.integers(0, 10_000), pick=st.integers(0, 500),
       bot_seed=st.integers(0, 2**32 - 1))  # fmt: skip
def test_the_hidden_cards_swapped_give_the_same_decision_at_every_level(
    name: str, seed: int, pick: int, bot_seed: int
) -> None:
    game = games()[name]
    state, seat = sample(name, seed, pick)
    other = hidden_swapped(name, state, seat, random.Random(seed))
    view, same = game.view(state, seat).to_json(), game.view(other, seat).to_json()
    assert view == same  # the seat cannot tell the two apart
    for level in Level:
        first = decide(view, level, random.Random(bot_seed), Budget(iterations=ITERATIONS))
        second = decide(same, level, random.Random(bot_seed), Budget(iterations=ITERATIONS))
        assert first == second, level


@settings(max_examples=10, deadline=None)
@given(name=st.sampled_from([SPECTACULAR_BID, FIVE_OH_ONE]), seed=st.integers(0, 10_000), pick=st.integers(0, 500))
def test_the_search_level_only_answers_legal_actions(name: str, seed: int, pick: int) -> None:
    game = games()[name]
    state, seat = sample(name, seed, pick)
    view = game.view(state, seat).to_json()
    action = decide(view, Level.SEARCH, random.Random(seed), Budget(iterations=ITERATIONS))
    assert action is not None
    assert action["do"] not in ("resign", "abandon") or action in view["legal"]
    game.apply(state, seat, game.parse_action(action), state_now(game, state))  # raises if illegal


def state_now(game: Any, state: Any) -> Any:
    """An instant before any deadline of `state`: when its running decision began."""
    view = game.view(state, Seat(0)).to_json()
    return view.get("decision_since_ms") or 0


def test_a_search_runs_exactly_its_iterations_and_stops_on_an_injected_clock() -> None:
    for name in (SPECTACULAR_BID, FIVE_OH_ONE):
        state, seat = sample(name, 3, 5)
        view = games()[name].view(state, seat).to_json()
        worlds = SbWorlds.of(view) if name == SPECTACULAR_BID else FiveWorlds.of(view)
        assert worlds is not None
        moves = [m for m, _ in worlds.root_moves()]
        root = ismcts(worlds, moves, random.Random(1), Budget(iterations=37))
        assert sum(child.visits for child in root.children.values()) == 37
        clock = itertools.count().__next__  # each reading one second later
        timed = ismcts(worlds, moves, random.Random(1), Budget(iterations=None, seconds=5, clock=clock))
        assert sum(child.visits for child in timed.children.values()) == 4  # read at 0 (start), 1..4 go, 5 stops


def test_the_target_is_what_the_sampled_points_make_best_with_one_more_short() -> None:
    assert best_target([130, 125, 140, 128], 70) == 125  # made in all four (one more short: 125 · 3)
    assert best_target([130, 60, 140, 50], 70) == 70  # short in two of four: as little as allowed
    assert best_target([], 90) == 90
    assert best_target([230, 230, 230], 200) == 200  # no target above 220 (F-3): 230 is not one
    assert best_target([100, 100, 100, 100, 100, 100, 100, 100, 40, 40], 66) == 100  # 100 · 5 > 66 · 5


def test_a_declaration_raises_its_target_on_a_strong_hand_within_its_budget() -> None:
    """Greedy declares at the bid; the search plays out its chosen declaration to set the target."""
    game = games()[FIVE_OH_ONE]
    turns = self_play(game, ["0", "1", "2"], random.Random(11), options=SHORT[FIVE_OH_ONE], greedy=[True] * 3)
    found = [t.match.state for t in turns if isinstance(t.match.state.hand, Contract)]
    assert found
    raised = 0
    for state in found[:6]:
        seat = state.hand.declarer
        view = game.view(state, seat).to_json()
        action = decide(view, Level.SEARCH, random.Random(3), Budget(iterations=40))
        assert action is not None and action["do"] == "declare"
        assert state.hand.bid <= action["target"] <= 220
        game.apply(state, seat, game.parse_action(action), state_now(game, state))  # raises if illegal
        raised += action["target"] > state.hand.bid
        clock = itertools.count().__next__  # one second a reading: the whole decision reads it 7 + 2 times
        timed = decide(view, Level.SEARCH, random.Random(3), Budget(iterations=None, seconds=6, clock=clock))
        assert timed is not None and timed["do"] in ("declare", "abandon")
    assert raised > 0


def test_a_move_budget_never_spends_more_than_a_tenth_of_the_time_left() -> None:
    view = {"seat": 1, "clock_running": 1, "decision_since_ms": 5_000, "deadline_ms": 7_000}
    assert move_budget(view, 1000).seconds == 0.2
    assert move_budget({**view, "deadline_ms": 500_000}, 1000).seconds == 1.0
    assert move_budget({**view, "clock_running": 0}, 300).seconds == 0.3  # not our clock: the move budget


def test_random_and_greedy_levels_are_the_view_policies() -> None:
    state, seat = sample(SPECTACULAR_BID, 4, 9)
    view = games()[SPECTACULAR_BID].view(state, seat).to_json()
    for level, greedy in ((Level.RANDOM, False), (Level.GREEDY, True)):
        assert decide(view, level, random.Random(2)) == choose(view, random.Random(2), greedy)


def test_a_search_bot_plays_a_whole_match_over_grpc() -> None:
    async def body(address: str, client: Client) -> list[dict[str, Any]]:
        match = await client.create_match(SPECTACULAR_BID, ["Ana", "Bia"], {"start_points": 30})
        return await asyncio.gather(
            run_bot(address, match.match_id, match.tokens[0], level=Level.SEARCH, move_ms=5, seed=1),
            run_bot(address, match.match_id, match.tokens[1], level=Level.GREEDY, seed=2),
        )

    finals = serve(body, timeout=120)
    assert all(f["status"] == "finished" for f in finals)


def test_the_bot_command_takes_a_level_and_refuses_contradictions() -> None:
    base = [sys.executable, "-m", "tablehall.cli", "bot", "--match", "m", "--token", "t", "--address", "127.0.0.1:1"]
    for extra, said in ((["--greedy", "--level", "search"], "contradicts"), (["--move-ms", "0"], "--move-ms")):
        run = subprocess.run([*base, *extra], capture_output=True, text=True, timeout=60, check=False)
        assert run.returncode == 2 and said in run.stderr and "Traceback" not in run.stderr
    parsed = parser().parse_args(["bot", "--match", "m", "--token", "t", "--level", "search", "--move-ms", "50"])
    assert (parsed.level, parsed.move_ms, parsed.greedy) == ("search", 50, False)
