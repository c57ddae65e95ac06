"""Property tests over random legal 501♠ games from random deals (hypothesis)."""

from __future__ import annotations

import json
import random
from collections import Counter
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.f501 import GAME
from workers.games.engine import Millis, Seat
from workers.games.five_oh_one.cards import DECK, TOTAL_POINTS, Card
from workers.games.five_oh_one.state import Bidding, Contract, State, Tricks
from workers.games.records import Match, replay

games = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 2**32 - 1),
        "seats": st.sampled_from([3, 4]),
        "dealer": st.integers(0, 3),
        "start_score": st.sampled_from([40, 120, 501]),
        "limit": st.sampled_from([None, 30]),
    }
)


def accounted(state: State) -> Counter[Card]:
    """Every card where it is now: hands, the unexposed talon, the trick on the table, tricks taken."""
    hand = state.hand
    assert hand is not None
    where: Counter[Card] = Counter(c for cards in hand.hands for c in cards)
    if isinstance(hand, Bidding):
        where.update(hand.talon)
    if isinstance(hand, Tricks):
        where.update(c for _, c in hand.trick)
        where.update(c for trick in hand.done for c in trick.cards)
    return where


def hidden_from(state: State, viewer: Seat | None) -> set[Card]:
    """What `viewer` must not learn: others' cards (bar the exposed talon), the talon before it is
    exposed, and the viewer's own cards while still blind."""
    hand = state.hand
    assert hand is not None
    exposed: set[Card] = set() if isinstance(hand, Bidding) else set(_talon(hand))
    hidden = {c for s, cards in enumerate(hand.hands) if s != viewer for c in cards} - exposed
    if isinstance(hand, Bidding):
        hidden |= set(hand.talon)
        if viewer is not None and viewer not in hand.looked:
            hidden |= hand.hands[viewer]
    return hidden


def _talon(hand: Contract | Tricks) -> tuple[Card, ...]:
    return hand.talon if isinstance(hand, Contract) else hand.terms.talon


def play(params: dict[str, Any]) -> tuple[Match, list[int]]:
    """A random legal game; returns the match and each played hand's total of captured card points."""
    rng = random.Random(params["seed"])
    seats = params["seats"]
    options = {"start_score": params["start_score"], "decision_limit_s": params["limit"]}
    match = Match.start(GAME, [f"p{i}" for i in range(seats)], options, Seat(params["dealer"] % seats))
    t = Millis(0)
    totals: list[int] = []
    captured = 0
    for _ in range(600):
        if match.over:
            break
        if GAME.needs_deal(match.state):
            order = list(range(len(DECK)))
            rng.shuffle(order)
            match, _ = match.deal(GAME.deal_from(match.state, order), t)
            continue
        check_invariants(match.state)
        t = Millis(t + rng.choice([0, 0, 250, 1500, 10_000, 29_999] + ([31_000] if rng.random() < 0.01 else [])))
        match, _ = match.advance(t)
        if match.over:
            break
        options_by_seat = [(s, GAME.legal_actions(match.state, Seat(s))) for s in range(seats)]
        movers = [(s, acts) for s, acts in options_by_seat if acts]
        seat, acts = rng.choice(movers)
        match, happened = match.apply(Seat(seat), acts[rng.randrange(len(acts))], t)
        for event in happened:
            if event.kind == "trick":
                captured += event.facts["points"]
            if event.kind == "hand":
                if event.facts["target"] is not None:
                    totals.append(captured)
                captured = 0
    return match, totals


def check_invariants(state: State) -> None:
    where = accounted(state)
    assert set(where) == set(DECK) and set(where.values()) == {1}, "24 cards, each exactly once"
    for viewer in (None, *map(Seat, range(state.table.seats))):
        shown = json.dumps(GAME.view(state, viewer).to_json()).encode()
        for card in hidden_from(state, viewer):
            assert f'"{card.code}"'.encode() not in shown, (viewer, card)


@settings(max_examples=60, deadline=None)
@given(games)
def test_random_legal_games(params: dict[str, Any]) -> None:
    match, totals = play(params)
    assert all(total == TOTAL_POINTS for total in totals)  # every played hand deals out 120
    out = match.outcome()
    for hand in out["hands"]:
        assert len(hand["points"]) == params["seats"]
        if hand["target"] is not None:
            assert sum(hand["points"]) >= TOTAL_POINTS  # card points plus valid marriages
    assert replay(json.loads(json.dumps(match.record()))).to_json() == out
    if out["status"] == "finished":
        assert out["reason"] in GAME.endings  # the engine's own list (the metrics export each at 0)
    if out["status"] == "finished" and out.get("reason") == "score":
        low = min(out["scores"])
        assert low <= 0 and out["winners"] == [s for s, v in enumerate(out["scores"]) if v == low]


def test_a_game_reaches_its_end() -> None:
    """Played until someone is at zero (not capped by time or steps) at least once across seeds."""
    ends = [play({"seed": s, "seats": 3, "dealer": 0, "start_score": 40, "limit": None})[0] for s in range(20)]
    assert any(m.outcome().get("reason") == "score" for m in ends)
