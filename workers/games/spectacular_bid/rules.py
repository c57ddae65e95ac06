"""Spectacular Bid's rules SB-1..SB-13 as pure transitions: (state, seat, action, now) -> (state, events).

Events are for the host and the record, not for clients: a `draw` event names the drawn tile.
Clients only ever get views (view.py).
"""

from __future__ import annotations

from workers.games.engine import CHANCE, Event, Millis, Seat, seconds
from workers.games.errors import IllegalAction, MalformedAction
from workers.games.spectacular_bid.actions import Action, Deal, Draw, Play, Ready, Resign, Reveal
from workers.games.spectacular_bid.auction import answer, auction_actions
from workers.games.spectacular_bid.flow import decide, finish, over_message
from workers.games.spectacular_bid.play import draw, lead_actions, play, play_actions
from workers.games.spectacular_bid.state import (
    AUCTION,
    DEAL,
    LEAD,
    OVER,
    PLAY,
    READY,
    SEATS,
    Auction,
    Round,
    State,
    other,
)
from workers.games.spectacular_bid.tiles import lead_rank
from workers.games.values import evolve

Events = tuple[Event, ...]
_NONE: Events = ()


def next_deadline(state: State) -> Millis | None:
    phase = state.phase  # a replay asks twice a step: the decision phases first
    if phase is PLAY or phase is LEAD or phase is AUCTION:
        return state.clock.deadline()
    if phase is READY:
        return Millis(state.paused_at + state.options.ready_timeout)
    return None  # dealing, or over


def on_deadline(state: State, now: Millis) -> tuple[State, Events]:
    """Ready timeouts start the clocks (SB-10 [ours]); a passed deadline loses on time (SB-13)."""
    events: Events = ()
    while (deadline := next_deadline(state)) is not None and deadline <= now:
        if state.phase is READY:
            state, started = _begin(state, deadline)
            events += (Event("clocks_started", None, {"t": seconds(deadline)}), *started)
        else:
            flagged = state.clock.turn
            assert flagged is not None
            state = finish(evolve(state, clock=state.clock.flag()), other(flagged), "time", "time")
            events += (Event("flag", flagged, {"t": seconds(deadline)}),)
    return state, events


def apply(state: State, seat: Seat, action: Action | Deal, now: Millis) -> tuple[State, Events]:
    kind, phase = type(action), state.phase
    if (
        (kind is Play or kind is Draw)
        and (phase is PLAY or phase is LEAD)
        and seat == state.turn
        and not state.hand_over
    ):
        # the common move: a play or a draw by the seat whose turn it is, which passes every check of the
        # full path below but the clock's: that one here, then the move
        deadline = state.clock.deadline()
        if deadline is not None and now >= deadline:
            raise IllegalAction(f"too late: the deadline passed at {seconds(deadline)} s")
        round = state.round
        assert round is not None
        if kind is Play:
            return play(state, round, seat, action, now)  # type: ignore[arg-type]
        return draw(state, round, seat, now)
    if seat == CHANCE:
        if not isinstance(action, Deal):
            raise MalformedAction("chance only deals")
        return _deal(state, action, now)
    if isinstance(action, Deal):
        raise IllegalAction("only the service deals")
    if seat not in SEATS:
        raise IllegalAction(f"there is no seat {seat} in a two-player match")
    if state.phase is OVER:
        raise IllegalAction(over_message(state))
    deadline = next_deadline(state)
    if deadline is not None and now >= deadline:
        raise IllegalAction(f"too late: the deadline passed at {seconds(deadline)} s")
    if isinstance(action, Resign):
        return _resign(state, seat, now)
    if state.phase is DEAL:
        raise IllegalAction("the next round is being dealt")
    if isinstance(action, Ready):
        return _ready(state, seat, now)
    if isinstance(action, Reveal):
        return _reveal(state, seat, now)
    if state.phase is READY:
        raise IllegalAction("the clocks have not started yet: only Continue, reveal and resign now")
    if state.hand_over:
        raise IllegalAction(f"waiting for seat {state.turn} to take the device and reveal their tiles")
    if seat != state.turn:
        raise IllegalAction(f"it is seat {state.turn}'s turn, not seat {seat}'s")
    round = state.round
    assert round is not None
    if state.phase is AUCTION:
        return answer(state, round, seat, action, now)
    if isinstance(action, Play):
        return play(state, round, seat, action, now)
    if isinstance(action, Draw):
        return draw(state, round, seat, now)
    raise IllegalAction(f"{action.do} is not possible now: the lead auction is over")


def legal_actions(state: State, seat: Seat) -> list[Action]:
    """Every action `seat` may take now (resigning included)."""
    if state.phase is OVER or seat not in SEATS:
        return []
    actions: list[Action] = []
    round = state.round
    if state.phase is READY:
        if seat not in state.ready:
            actions.append(Ready())
        if state.options.shared_device:
            actions.append(Reveal())
    elif state.hand_over:
        if seat == state.turn:
            actions.append(Reveal())
    elif seat == state.turn and round is not None:
        if state.phase is AUCTION:
            actions += auction_actions(state, round, seat)
        elif state.phase is LEAD:
            actions += lead_actions(round, seat)
        else:
            actions += play_actions(round, seat)
    if state.phase is not DEAL:
        actions.append(Resign())
    return actions


def _deal(state: State, deal: Deal, now: Millis) -> tuple[State, Events]:
    if state.phase is not DEAL:
        raise IllegalAction("no deal is due")
    previous = state.past[-1] if state.past else None
    jockey = previous.domino_by if previous is not None else None
    hands = (frozenset(deal.hands[0]), frozenset(deal.hands[1]))
    leader = forced = None
    if jockey is None:
        # SB-3: first round and after a block, the highest double (else the highest tile) leads
        forced = max((*hands[0], *hands[1]), key=lead_rank)
        leader = SEATS[0] if forced in hands[0] else SEATS[1]
    round = Round(hands, deal.boneyard, jockey=jockey, leader=leader, forced=forced)
    number = len(state.past) + 1
    state = evolve(
        state, phase=READY, round=round, ready=frozenset(), paused_at=now, turn=None, hand_over=False
    )
    return state, (Event("deal", None, {"round": number, "jockey": jockey}),)


def _ready(state: State, seat: Seat, now: Millis) -> tuple[State, Events]:
    if state.phase is not READY:
        raise IllegalAction("the clocks are already running")
    if seat in state.ready:
        raise IllegalAction("you have already pressed Continue")
    ready = state.ready | {seat}
    state = evolve(state, ready=ready)
    events: Events = (Event("ready", seat),)
    if len(ready) == len(SEATS):
        state, started = _begin(state, now)
        events += (Event("clocks_started", None, {"t": seconds(now)}), *started)
    return state, events


def _reveal(state: State, seat: Seat, now: Millis) -> tuple[State, Events]:
    if not state.options.shared_device:
        raise IllegalAction("reveal is only for matches on a shared device")
    if state.phase is READY:
        return evolve(state, holder=seat), (Event("reveal", seat),)
    if not state.hand_over or seat != state.turn:
        raise IllegalAction("there is no hand-over to you now")
    state = evolve(state, holder=seat, hand_over=False, clock=state.clock.start(seat, now))
    return state, (Event("reveal", seat),)


def _begin(state: State, now: Millis) -> tuple[State, Events]:
    """The clocks start: the jockey's opponent answers the auction, or the forced leader leads."""
    round = state.round
    assert round is not None
    if round.jockey is not None:
        state = evolve(state, phase=AUCTION, round=evolve(round, auction=Auction()), ready=frozenset())
        return decide(state, other(round.jockey), now), _NONE
    assert round.leader is not None
    return decide(evolve(state, phase=LEAD, ready=frozenset()), round.leader, now), _NONE


def _resign(state: State, seat: Seat, now: Millis) -> tuple[State, Events]:
    state = evolve(state, clock=state.clock.stop(now))
    return finish(state, other(seat), "resign", "resign"), (Event("resign", seat),)


def void(state: State, reason: str, now: Millis) -> tuple[State, Events]:
    """SB-11: a proven service fault ends the match with no result; the reason is kept."""
    if state.phase is OVER:
        raise IllegalAction(over_message(state))
    state = evolve(
        state, phase=OVER, clock=state.clock.stop(now), void_reason=reason, winner=None, reason=None
    )
    return state, (Event("void", None, {"reason": reason}),)

