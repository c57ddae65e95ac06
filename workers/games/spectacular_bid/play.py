"""The lead and the play: SB-3 forced lead, SB-4/5 laying and counting, SB-6 draws and forced passes,
SB-7 domino and SB-8 block."""

from __future__ import annotations

from collections.abc import Collection

from workers.games.engine import Event, Millis, Seat
from workers.games.errors import IllegalAction
from workers.games.spectacular_bid.actions import Action, Draw, Play
from workers.games.spectacular_bid.flow import decide, end_round, finish, moved
from workers.games.spectacular_bid.layout import Layout
from workers.games.spectacular_bid.state import LEAD, OTHER, PLAY, SEATS, Phase, Round, State, other
from workers.games.spectacular_bid.tiles import End, Tile, lead_rank, round_to_five
from workers.games.values import evolve

Events = tuple[Event, ...]


def can_play(layout: Layout, hand: Collection[Tile]) -> bool:
    if layout.empty:
        return bool(hand)
    ends = layout.open_ends()
    for t in hand:  # plain loops: this runs for every draw and forced pass
        for _, pip in ends:
            if pip == t.high or pip == t.low:
                return True
    return False


def lead_actions(round: Round, seat: Seat) -> list[Action]:
    if round.forced is not None:
        return [Play(round.forced, None, round.forced.high)]
    actions: list[Action] = []
    for t in sorted(round.hands[seat], key=lead_rank, reverse=True):
        actions.append(Play(t, None, t.high))
        if not t.double:
            actions.append(Play(t, None, t.low))
    return actions


def play_actions(round: Round, seat: Seat) -> list[Action]:
    ends = round.layout.open_ends()
    tiles = (round.drawn,) if round.drawn is not None else round.hands[seat]
    plays: list[Action] = [
        Play(t, end) for t in tiles for end, pip in ends if pip == t.high or pip == t.low
    ]
    return plays if plays or round.drawn is not None else [Draw()]


def play(state: State, round: Round, seat: Seat, play: Play, now: Millis) -> tuple[State, Events]:
    hand = round.hands[seat]
    tile = play.tile
    if state.phase is LEAD:
        if play.end is not None:
            raise IllegalAction("a lead names no end: the first number of the tile faces W")
        rest = hand - {tile}  # the hand after the play: its size tells whether the tile was held
        if len(rest) == len(hand):
            raise IllegalAction(f"you do not hold {tile}")
        if round.forced is not None and tile != round.forced:
            raise IllegalAction(f"you must lead {round.forced} (SB-3)")
        west = tile.high if play.west is None else play.west
        if west != tile.high and west != tile.low:
            raise IllegalAction(f"{tile} has no {west}")
        return _after_play(state, round, seat, rest, tile, None, Layout().lead(tile, west), now, PLAY)
    end = play.end
    if end is None:
        raise IllegalAction("name the end to play on: W, E, N or S")
    if round.drawn is not None and tile != round.drawn:
        raise IllegalAction(f"you drew {round.drawn}: it must be placed at once (SB-6)")
    rest = hand - {tile}
    if len(rest) == len(hand):
        raise IllegalAction(f"you do not hold {tile}")
    pip = round.layout.pip_at(end)
    if pip is None or (pip != tile.high and pip != tile.low):
        raise IllegalAction(_no_fit(round.layout, tile, end))
    return _after_play(state, round, seat, rest, tile, end, round.layout.place_on(tile, end, pip), now)


def _after_play(
    state: State,
    round: Round,
    seat: Seat,
    rest: frozenset[Tile],
    tile: Tile,
    end: End | None,
    layout: Layout,
    now: Millis,
    phase: Phase | None = None,
) -> tuple[State, Events]:
    """The play's count and transfer, then the next decision; `rest` is the player's hand after it.
    `phase` (the lead's new phase) and the play's own changes go into one new state on the common path."""
    if phase is None:
        phase = state.phase
    hands = (rest, round.hands[1]) if seat == 0 else (round.hands[0], rest)
    count = layout.count()
    points = state.points
    scored = 0
    if count > 0 and count % 5 == 0:
        # SB-5: a positive multiple of 5 transfers that many points, capped by the payer's balance (SB-1)
        points = moved(points, seat, count)
        scored = points[seat] - state.points[seat]
    # `_value_`, not the `value` property: the same string without two Python calls
    facts = {"tile": tile.name, "end": None if end is None else end._value_, "count": count, "scored": scored}
    events: Events = (Event("play", seat, facts),)
    round = round.played(hands, layout)
    opponent = OTHER[seat]
    if points[opponent] == 0:
        state = evolve(state, points=points, round=round, clock=state.clock.stop(now), phase=phase)
        return finish(state, seat, "points", "points"), events
    if not rest:
        # SB-7: the last tile ends the round after its count; its player becomes the jockey
        ended = evolve(round, end="domino", domino_by=seat)
        state = evolve(state, points=points, round=ended, phase=phase)
        return end_round(state, now), (*events, Event("domino", seat))
    if round.boneyard or can_play(layout, hands[opponent]):
        return decide(state, opponent, now, points, round, phase), events
    state, more = _next_turn(evolve(state, points=points, round=round, phase=phase), opponent, now)
    return state, events + more


def draw(state: State, round: Round, seat: Seat, now: Millis) -> tuple[State, Events]:
    if state.phase is not PLAY:
        raise IllegalAction("there is nothing to draw for before the lead")
    if round.drawn is not None:
        raise IllegalAction(f"you drew {round.drawn}, which plays: place it")
    hand = round.hands[seat]
    if can_play(round.layout, hand):
        raise IllegalAction("you can play, so you may not draw (SB-6)")
    if not round.boneyard:
        raise IllegalAction("the boneyard is empty")
    drawn, boneyard = round.boneyard[0], round.boneyard[1:]
    hand = hand | {drawn}
    hands = (hand, round.hands[1]) if seat == 0 else (round.hands[0], hand)
    playable = can_play(round.layout, (drawn,))
    round = round.drew(hands, boneyard, drawn if playable else None)
    events: Events = (Event("draw", seat, {"tile": drawn.name, "left": len(boneyard)}),)
    if playable or boneyard:
        return state.moved_on(seat, state.clock, state.hand_over, None, round, None), events  # the same decision
    state = evolve(state, round=round)
    # SB-6: the boneyard is empty and nothing plays: the pass is forced; this draw ended the decision
    state = evolve(state, clock=state.clock.stop(now), round=evolve(round, passes=round.passes + 1))
    events += (Event("pass", seat, {"forced": True}),)
    assert state.round is not None
    if state.round.passes >= 2:
        return _block(state, now), events
    state, more = _next_turn(state, other(seat), now)
    return state, events + more


def _next_turn(state: State, seat: Seat, now: Millis) -> tuple[State, Events]:
    """The turn passes to `seat`; a player who can neither play nor draw passes automatically."""
    events: Events = ()
    for _ in SEATS:
        round = state.round
        assert round is not None
        if round.boneyard or can_play(round.layout, round.hands[seat]):
            return decide(state, seat, now), events
        round = evolve(round, passes=round.passes + 1)
        state = evolve(state, round=round)
        events += (Event("pass", seat, {"forced": True}),)
        if round.passes >= 2:
            return _block(state, now), events
        seat = other(seat)
    raise AssertionError("unreachable: two passes block the round")


def _block(state: State, now: Millis) -> State:
    """SB-8: the lower hand sum wins the other's whole sum rounded to 5; no jockey next round."""
    round = state.round
    assert round is not None
    sums = [sum(t.pips for t in hand) for hand in round.hands]
    points = state.points
    if sums[0] != sums[1]:
        low = SEATS[0] if sums[0] < sums[1] else SEATS[1]
        points = moved(points, low, round_to_five(sums[other(low)]))
    state = evolve(state, points=points, round=evolve(round, end="block"), clock=state.clock.stop(now))
    for seat in SEATS:
        if points[seat] == 0:
            return finish(state, other(seat), "points", "block")
    return end_round(state, now)


def _no_fit(layout: Layout, tile: Tile, end: object) -> str:
    ends = dict(layout.open_ends())
    for e, pip in ends.items():
        if e is end:
            return f"{tile} does not fit the {e.value} end, which shows {pip}"
    open_names = ", ".join(e.value for e in ends)
    return f"the {getattr(end, 'value', end)} end is not open (open ends: {open_names})"

