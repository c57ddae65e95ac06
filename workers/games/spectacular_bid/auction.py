"""SB-9: the lead auction after a domino, with the jockey's discount and every balance limit."""

from __future__ import annotations

from workers.games.engine import Event, Millis, Seat
from workers.games.errors import IllegalAction
from workers.games.spectacular_bid.actions import Accept, Action, Bid, Decline, Raise
from workers.games.spectacular_bid.flow import decide, finish, moved
from workers.games.spectacular_bid.state import (
    BID_STEP,
    JOCKEY_DISCOUNT,
    LEAD,
    MIN_BID,
    Auction,
    Round,
    Sale,
    State,
    other,
)
from workers.games.values import evolve

Events = tuple[Event, ...]


def net(round: Round, seat: Seat, amount: int) -> int:
    """What a bid costs its author: the jockey's own winning bid is discounted by 15, never below 0."""
    return max(0, amount - JOCKEY_DISCOUNT) if seat == round.jockey else amount


def answer(state: State, round: Round, seat: Seat, action: Action, now: Millis) -> tuple[State, Events]:
    auction = round.auction
    assert auction is not None
    if isinstance(action, Decline):
        if auction.bid is not None:
            raise IllegalAction("a bid stands: accept it or raise")
        jockey = round.jockey
        assert jockey is not None
        round = evolve(round, declined=True, leader=jockey, auction=None)
        return decide(state, jockey, now, round=round, phase=LEAD), (Event("decline", seat),)
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
        cost = net(round, seat, amount)
        if cost > state.points[seat]:
            raise IllegalAction(f"a {action.do} of {amount} would cost {cost}, more than your {state.points[seat]}")
        round = evolve(round, auction=Auction(amount, seat))
        state = decide(state, other(seat), now, round=round)
        return state, (Event(action.do, seat, {"amount": amount}),)
    if isinstance(action, Accept):
        if auction.bid is None or auction.bidder is None:
            raise IllegalAction("there is no bid to accept: bid at least 15 or decline")
        payer = auction.bidder
        paid = net(round, payer, auction.bid)
        points = moved(state.points, seat, paid)
        round = evolve(round, sale=Sale(payer, auction.bid, paid), leader=payer, auction=None)
        events: Events = (Event("accept", seat, {"bid": auction.bid, "paid": paid, "by": payer}),)
        if points[payer] == 0:
            # SB-9: paying the whole balance loses at once, before the lead
            state = evolve(state, points=points, round=round, clock=state.clock.stop(now))
            return finish(state, seat, "points", "points"), events
        return decide(state, payer, now, points, round, LEAD), events
    raise IllegalAction(f"{action.do} is not possible during the lead auction: bid, raise, accept or decline")


def auction_actions(state: State, round: Round, seat: Seat) -> list[Action]:
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
    while net(round, seat, amount) <= state.points[seat]:
        actions.append(Bid(amount) if auction.bid is None else Raise(amount))
        amount += BID_STEP
    return actions

