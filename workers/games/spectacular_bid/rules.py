"""Spectacular Bid's rules SB-1..SB-13 as pure transitions: (state, seat, action, now) -> (state, events).

Events are for the host and the record, not for clients: a `draw` event names the drawn tile.
Clients only ever get views (view.py).
"""

from __future__ import annotations

from workers.games.engine import CHANCE, Event, Millis, Seat, seconds
from workers.games.errors import IllegalAction, MalformedAction
from workers.games.spectacular_bid.actions import (
    Accept,
    Action,
    Bid,
    Deal,
    Decline,
    Draw,
    Play,
    Raise,
    Ready,
    Resign,
    Reveal,
)
from workers.games.spectacular_bid.layout import Layout
from workers.games.spectacular_bid.state import (
    BID_STEP,
    JOCKEY_DISCOUNT,
    MIN_BID,
    SEATS,
    Auction,
    Phase,
    Round,
    Sale,
    State,
    other,
)
from workers.games.spectacular_bid.tiles import Tile, lead_rank, round_to_five
from workers.games.values import evolve

Events = tuple[Event, ...]
_NONE: Events = ()


def next_deadline(state: State) -> Millis | None:
    if state.phase is Phase.READY:
        return Millis(state.paused_at + state.options.ready_timeout)
    if state.phase is Phase.DEAL or state.phase is Phase.OVER:
        return None
    return state.clock.deadline()


def on_deadline(state: State, now: Millis) -> tuple[State, Events]:
    """Ready timeouts start the clocks (SB-10 [ours]); a passed deadline loses on time (SB-13)."""
    events: Events = ()
    while (deadline := next_deadline(state)) is not None and deadline <= now:
        if state.phase is Phase.READY:
            state, started = _begin(state, deadline)
            events += (Event("clocks_started", None, {"t": seconds(deadline)}), *started)
        else:
            flagged = state.clock.turn
            assert flagged is not None
            state = _finish(evolve(state, clock=state.clock.flag()), other(flagged), "time", "time")
            events += (Event("flag", flagged, {"t": seconds(deadline)}),)
    return state, events


def apply(state: State, seat: Seat, action: Action | Deal, now: Millis) -> tuple[State, Events]:
    if seat == CHANCE:
        if not isinstance(action, Deal):
            raise MalformedAction("chance only deals")
        return _deal(state, action, now)
    if isinstance(action, Deal):
        raise IllegalAction("only the service deals")
    if seat not in SEATS:
        raise IllegalAction(f"there is no seat {seat} in a two-player match")
    if state.phase is Phase.OVER:
        raise IllegalAction(_over_message(state))
    deadline = next_deadline(state)
    if deadline is not None and now >= deadline:
        raise IllegalAction(f"too late: the deadline passed at {seconds(deadline)} s")
    if isinstance(action, Resign):
        return _resign(state, seat, now)
    if state.phase is Phase.DEAL:
        raise IllegalAction("the next round is being dealt")
    if isinstance(action, Ready):
        return _ready(state, seat, now)
    if isinstance(action, Reveal):
        return _reveal(state, seat, now)
    if state.phase is Phase.READY:
        raise IllegalAction("the clocks have not started yet: only Continue, reveal and resign now")
    if state.hand_over:
        raise IllegalAction(f"waiting for seat {state.turn} to take the device and reveal their tiles")
    if seat != state.turn:
        raise IllegalAction(f"it is seat {state.turn}'s turn, not seat {seat}'s")
    round = state.round
    assert round is not None
    if state.phase is Phase.AUCTION:
        return _auction(state, round, seat, action, now)
    if isinstance(action, Play):
        return _play(state, round, seat, action, now)
    if isinstance(action, Draw):
        return _draw(state, round, seat, now)
    raise IllegalAction(f"{action.do} is not possible now: the lead auction is over")


def legal_actions(state: State, seat: Seat) -> list[Action]:
    """Every action `seat` may take now (resigning included)."""
    if state.phase is Phase.OVER or seat not in SEATS:
        return []
    actions: list[Action] = []
    round = state.round
    if state.phase is Phase.READY:
        if seat not in state.ready:
            actions.append(Ready())
        if state.options.shared_device:
            actions.append(Reveal())
    elif state.hand_over:
        if seat == state.turn:
            actions.append(Reveal())
    elif seat == state.turn and round is not None:
        if state.phase is Phase.AUCTION:
            actions += _auction_actions(state, round, seat)
        elif state.phase is Phase.LEAD:
            actions += _lead_actions(round, seat)
        else:
            actions += _play_actions(round, seat)
    if state.phase is not Phase.DEAL:
        actions.append(Resign())
    return actions


def can_play(layout: Layout, hand: frozenset[Tile]) -> bool:
    if layout.empty:
        return bool(hand)
    pips = {pip for _, pip in layout.open_ends()}
    return any(t.high in pips or t.low in pips for t in hand)


# --- deal, Continue, hand-over -------------------------------------------------------------------


def _deal(state: State, deal: Deal, now: Millis) -> tuple[State, Events]:
    if state.phase is not Phase.DEAL:
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
        state, phase=Phase.READY, round=round, ready=frozenset(), paused_at=now, turn=None, hand_over=False
    )
    return state, (Event("deal", None, {"round": number, "jockey": jockey}),)


def _ready(state: State, seat: Seat, now: Millis) -> tuple[State, Events]:
    if state.phase is not Phase.READY:
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
    if state.phase is Phase.READY:
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
        state = evolve(state, phase=Phase.AUCTION, round=evolve(round, auction=Auction()), ready=frozenset())
        return _decide(state, other(round.jockey), now), _NONE
    assert round.leader is not None
    return _decide(evolve(state, phase=Phase.LEAD, ready=frozenset()), round.leader, now), _NONE


def _decide(state: State, seat: Seat, now: Millis) -> State:
    """A truly new decision for `seat` (SB-10): fresh delay, or a hand-over pause on a shared device."""
    if state.options.shared_device and state.holder != seat:
        return evolve(state, turn=seat, clock=state.clock.stop(now), hand_over=True)
    return evolve(state, turn=seat, clock=state.clock.start(seat, now), hand_over=False)


# --- the lead auction (SB-9) ---------------------------------------------------------------------


def _net(round: Round, seat: Seat, amount: int) -> int:
    """What a bid costs its author: the jockey's own winning bid is discounted by 15, never below 0."""
    return max(0, amount - JOCKEY_DISCOUNT) if seat == round.jockey else amount


def _auction(state: State, round: Round, seat: Seat, action: Action, now: Millis) -> tuple[State, Events]:
    auction = round.auction
    assert auction is not None
    if isinstance(action, Decline):
        if auction.bid is not None:
            raise IllegalAction("a bid stands: accept it or raise")
        jockey = round.jockey
        assert jockey is not None
        round = evolve(round, declined=True, leader=jockey, auction=None)
        state = evolve(state, phase=Phase.LEAD, round=round)
        return _decide(state, jockey, now), (Event("decline", seat),)
    if isinstance(action, Bid | Raise):
        opening = isinstance(action, Bid)
        if opening and auction.bid is not None:
            raise IllegalAction(f"a bid of {auction.bid} stands: accept it or raise")
        if not opening and auction.bid is None:
            raise IllegalAction("no bid stands yet: bid at least 15 or decline")
        least = MIN_BID if auction.bid is None else auction.bid + BID_STEP
        amount = action.amount
        if amount < least or amount % BID_STEP:
            raise IllegalAction(f"a {action.do} must be a multiple of 5 of at least {least}, not {amount}")
        cost = _net(round, seat, amount)
        if cost > state.points[seat]:
            raise IllegalAction(f"a {action.do} of {amount} would cost {cost}, more than your {state.points[seat]}")
        round = evolve(round, auction=Auction(amount, seat))
        state = _decide(evolve(state, round=round), other(seat), now)
        return state, (Event(action.do, seat, {"amount": amount}),)
    if isinstance(action, Accept):
        if auction.bid is None or auction.bidder is None:
            raise IllegalAction("there is no bid to accept: bid at least 15 or decline")
        payer = auction.bidder
        paid = _net(round, payer, auction.bid)
        points = _moved(state.points, seat, paid)
        round = evolve(round, sale=Sale(payer, auction.bid, paid), leader=payer, auction=None)
        state = evolve(state, points=points, round=round)
        events: Events = (Event("accept", seat, {"bid": auction.bid, "paid": paid, "by": payer}),)
        if points[payer] == 0:
            # SB-9: paying the whole balance loses at once, before the lead
            return _finish(evolve(state, clock=state.clock.stop(now)), seat, "points", "points"), events
        return _decide(evolve(state, phase=Phase.LEAD), payer, now), events
    raise IllegalAction(f"{action.do} is not possible during the lead auction: bid, raise, accept or decline")


def _auction_actions(state: State, round: Round, seat: Seat) -> list[Action]:
    auction = round.auction
    assert auction is not None
    actions: list[Action] = []
    if auction.bid is None:
        actions.append(Decline())
        least = MIN_BID
    else:
        actions.append(Accept())
        least = auction.bid + BID_STEP
    amount = least
    while _net(round, seat, amount) <= state.points[seat]:
        actions.append(Bid(amount) if auction.bid is None else Raise(amount))
        amount += BID_STEP
    return actions


# --- the lead and the play (SB-3..SB-8) ----------------------------------------------------------


def _lead_actions(round: Round, seat: Seat) -> list[Action]:
    if round.forced is not None:
        return [Play(round.forced, None, round.forced.high)]
    actions: list[Action] = []
    for t in sorted(round.hands[seat], key=lead_rank, reverse=True):
        actions.append(Play(t, None, t.high))
        if not t.double:
            actions.append(Play(t, None, t.low))
    return actions


def _play_actions(round: Round, seat: Seat) -> list[Action]:
    ends = round.layout.open_ends()
    tiles = (round.drawn,) if round.drawn is not None else round.hands[seat]
    plays: list[Action] = [
        Play(t, end) for t in tiles for end, pip in ends if pip == t.high or pip == t.low
    ]
    return plays if plays or round.drawn is not None else [Draw()]


def _play(state: State, round: Round, seat: Seat, play: Play, now: Millis) -> tuple[State, Events]:
    hand = round.hands[seat]
    tile = play.tile
    if state.phase is Phase.LEAD:
        if play.end is not None:
            raise IllegalAction("a lead names no end: the first number of the tile faces W")
        if tile not in hand:
            raise IllegalAction(f"you do not hold {tile}")
        if round.forced is not None and tile != round.forced:
            raise IllegalAction(f"you must lead {round.forced} (SB-3)")
        west = tile.high if play.west is None else play.west
        if west != tile.high and west != tile.low:
            raise IllegalAction(f"{tile} has no {west}")
        layout = Layout().lead(tile, west)
        state = evolve(state, phase=Phase.PLAY)
    else:
        if play.end is None:
            raise IllegalAction("name the end to play on: W, E, N or S")
        if round.drawn is not None and tile != round.drawn:
            raise IllegalAction(f"you drew {round.drawn}: it must be placed at once (SB-6)")
        if tile not in hand:
            raise IllegalAction(f"you do not hold {tile}")
        if not round.layout.fits(tile, play.end):
            raise IllegalAction(_no_fit(round.layout, tile, play.end))
        layout = round.layout.place(tile, play.end)
    return _after_play(state, round, seat, tile, play, layout, now)


def _after_play(
    state: State, round: Round, seat: Seat, tile: Tile, play: Play, layout: Layout, now: Millis
) -> tuple[State, Events]:
    hands = (round.hands[0] - {tile}, round.hands[1]) if seat == 0 else (round.hands[0], round.hands[1] - {tile})
    count = layout.count()
    points = state.points
    facts = {"tile": str(tile), "end": play.end.value if play.end else None, "count": count, "scored": 0}
    if count > 0 and count % 5 == 0:
        # SB-5: a positive multiple of 5 transfers that many points, capped by the payer's balance (SB-1)
        points = _moved(points, seat, count)
        facts["scored"] = points[seat] - state.points[seat]
    round = evolve(round, hands=hands, layout=layout, drawn=None, passes=0)
    state = evolve(state, points=points, round=round)
    events: Events = (Event("play", seat, facts),)
    if points[other(seat)] == 0:
        return _finish(evolve(state, clock=state.clock.stop(now)), seat, "points", "points"), events
    if not hands[seat]:
        # SB-7: the last tile ends the round after its count; its player becomes the jockey
        ended = evolve(round, end="domino", domino_by=seat)
        return _end_round(evolve(state, round=ended), now), (*events, Event("domino", seat))
    state, more = _next_turn(state, other(seat), now)
    return state, events + more


def _draw(state: State, round: Round, seat: Seat, now: Millis) -> tuple[State, Events]:
    if state.phase is not Phase.PLAY:
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
    playable = can_play(round.layout, frozenset((drawn,)))
    round = evolve(round, hands=hands, boneyard=boneyard, drawn=drawn if playable else None)
    state = evolve(state, round=round)
    events: Events = (Event("draw", seat, {"tile": str(drawn), "left": len(boneyard)}),)
    if playable or boneyard:
        return state, events
    # SB-6: the boneyard is empty and nothing plays: the pass is forced; this draw ended the decision
    state = evolve(state, clock=state.clock.stop(now), round=evolve(round, passes=round.passes + 1))
    events += (Event("pass", seat),)
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
            return _decide(state, seat, now), events
        round = evolve(round, passes=round.passes + 1)
        state = evolve(state, round=round)
        events += (Event("pass", seat),)
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
        points = _moved(points, low, round_to_five(sums[other(low)]))
    state = evolve(state, points=points, round=evolve(round, end="block"), clock=state.clock.stop(now))
    for seat in SEATS:
        if points[seat] == 0:
            return _finish(state, other(seat), "points", "block")
    return _end_round(state, now)


def _no_fit(layout: Layout, tile: Tile, end: object) -> str:
    ends = dict(layout.open_ends())
    for e, pip in ends.items():
        if e is end:
            return f"{tile} does not fit the {e.value} end, which shows {pip}"
    open_names = ", ".join(e.value for e in ends)
    return f"the {getattr(end, 'value', end)} end is not open (open ends: {open_names})"


# --- ends of rounds and of the match -------------------------------------------------------------


def _moved(points: tuple[int, int], to: Seat, amount: int) -> tuple[int, int]:
    """SB-1: points pass from the other player to `to`, never more than the payer has."""
    payer = other(to)
    moved = min(amount, points[payer])
    return (points[0] + moved, points[1] - moved) if to == 0 else (points[0] - moved, points[1] + moved)


def _end_round(state: State, now: Millis) -> State:
    assert state.round is not None
    return evolve(
        state,
        phase=Phase.DEAL,
        past=(*state.past, state.round),
        round=None,
        turn=None,
        clock=state.clock.stop(now),
        hand_over=False,
        paused_at=now,
    )


def _finish(state: State, winner: Seat, reason: str, round_end: str) -> State:
    round = state.round
    if round is not None and round.end is None:
        round = evolve(round, end=round_end)
    return evolve(state, phase=Phase.OVER, round=round, winner=winner, reason=reason, hand_over=False)


def _resign(state: State, seat: Seat, now: Millis) -> tuple[State, Events]:
    state = evolve(state, clock=state.clock.stop(now))
    return _finish(state, other(seat), "resign", "resign"), (Event("resign", seat),)


def void(state: State, reason: str, now: Millis) -> tuple[State, Events]:
    """SB-11: a proven service fault ends the match with no result; the reason is kept."""
    if state.phase is Phase.OVER:
        raise IllegalAction(_over_message(state))
    state = evolve(
        state, phase=Phase.OVER, clock=state.clock.stop(now), void_reason=reason, winner=None, reason=None
    )
    return state, (Event("void", None, {"reason": reason}),)


def _over_message(state: State) -> str:
    if state.void_reason is not None:
        return f"the match was voided ({state.void_reason})"
    return f"the match is over: seat {state.winner} won on {state.reason}"
