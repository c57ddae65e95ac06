"""`apply` and the time-driven changes: one command in, a new state and what happened out."""

from __future__ import annotations

from collections.abc import Mapping

from workers.games.clock import Clock, ClockSettings
from workers.games.engine import CHANCE, JSON, Event, Millis, Seat, seconds
from workers.games.errors import IllegalAction, MalformedAction
from workers.games.five_oh_one import bidding, tricks
from workers.games.five_oh_one.actions import Abandon, Bid, Declare, Look, Pass, Play
from workers.games.five_oh_one.deals import bidding as begin
from workers.games.five_oh_one.options import parse as parse_options
from workers.games.five_oh_one.scoring import by_score, by_time, settle
from workers.games.five_oh_one.state import Bidding, Contract, Deal, Ending, HandResult, State, Table, Tricks


def start(seats: int, options: Mapping[str, JSON], lot: Seat) -> State:
    if not 3 <= seats <= 4:
        raise MalformedAction(f"501 is played by 3 or 4 players, not {seats}")
    if not 0 <= lot < seats:
        raise MalformedAction(f"the first dealer must be one of the {seats} seats, not {lot}")
    chosen = parse_options(options)
    table = Table(seats, chosen.start_score, chosen.limit, lot)
    clock = None if chosen.limit is None else Clock.fresh(ClockSettings(Millis(0), chosen.limit), seats)
    return State(table, (chosen.start_score,) * seats, lot, None, (), clock)


def options_json(state: State) -> dict[str, JSON]:
    limit = state.table.limit
    return {
        "start_score": state.table.start_score,
        "decision_limit_s": None if limit is None else seconds(limit),
    }


def apply(state: State, seat: Seat, action: object, now: Millis) -> tuple[State, tuple[Event, ...]]:
    """Checks legality first: an illegal command raises `IllegalAction` and changes nothing."""
    if state.ending is not None:
        raise IllegalAction(f"the game is over ({_ended(state.ending)})")
    clock = state.clock
    if clock is not None:
        deadline = clock.deadline()
        if deadline is not None and now >= deadline:
            raise IllegalAction(f"too late: seat {clock.turn}'s time to decide ran out at {seconds(deadline)} s")
    table = state.table
    hand = state.hand
    after: Bidding | Contract | Tricks | HandResult
    if type(hand) is Tricks and type(action) is Play and seat == hand.turn:
        # the common move: a card by the seat on turn (so a seat of the table, not chance)
        played, events = tricks.play(table, hand, seat, action)
        if isinstance(played, HandResult):
            return _scored(state, played, now, events)
        if clock is not None:
            clock = clock.start(played.turn, now)
        return State(table, state.scores, state.dealer, played, state.results, clock), events
    if seat == CHANCE:
        return _deal(state, action, now)
    if not 0 <= seat < table.seats:
        raise IllegalAction(f"there is no seat {seat} at this table")
    if isinstance(hand, Tricks) and isinstance(action, Play):
        after, events = tricks.play(table, hand, seat, action)
    elif isinstance(hand, Bidding) and isinstance(action, Look | Bid | Pass):
        if isinstance(action, Look):
            looked, events = bidding.look(table, hand, seat)
            return State(table, state.scores, state.dealer, looked, state.results, clock), events
        if isinstance(action, Bid):
            after, events = bidding.bid(table, hand, seat, action.amount)
        else:
            after, events = bidding.pass_(table, hand, seat)
    elif isinstance(hand, Contract) and isinstance(action, Abandon):
        after, events = bidding.abandon(table, hand, seat)
    elif isinstance(hand, Contract) and isinstance(action, Declare):
        after, events = bidding.declare(table, hand, seat, action)
    else:
        raise IllegalAction(_out_of_phase(hand, action))
    if isinstance(after, HandResult):
        return _scored(state, after, now, events)
    if clock is not None:
        clock = clock.start(_decider(after), now)
    return State(table, state.scores, state.dealer, after, state.results, clock), events


def next_deadline(state: State) -> Millis | None:
    if state.ending is not None or state.clock is None:
        return None
    return state.clock.deadline()


def on_deadline(state: State, now: Millis) -> tuple[State, tuple[Event, ...]]:
    """The decision limit ran out: that player loses the game, ranked last."""
    deadline = next_deadline(state)
    if deadline is None or deadline > now or state.clock is None or state.clock.turn is None:
        return state, ()
    flagged = state.clock.turn
    ending = by_time(state.scores, flagged)
    after = State(state.table, state.scores, state.dealer, state.hand, state.results, state.clock.flag(), ending)
    return after, (Event("time", flagged, {"t": seconds(deadline)}), _over(ending))


def void(state: State, reason: str, now: Millis) -> tuple[State, tuple[Event, ...]]:
    if state.ending is not None:
        raise IllegalAction(f"the game is already over ({_ended(state.ending)})")
    clock = None if state.clock is None else state.clock.stop(now)
    ending = Ending("void", (), None, reason)
    return State(state.table, state.scores, state.dealer, state.hand, state.results, clock, ending), (
        Event("void", None, {"reason": reason}),
    )


def outcome(state: State) -> dict[str, JSON]:
    """RECORDS.md's status, scores, winners and hands; once finished also `reason` ("score" or "time") and
    the `flagged` seat of a time loss; once voided `void_reason`, as Spectacular Bid and both views name it."""
    ending = state.ending
    status = "in_progress" if ending is None else "voided" if ending.reason == "void" else "finished"
    out: dict[str, JSON] = {
        "status": status,
        "scores": list(state.scores),
        "winners": [] if ending is None else list(ending.winners),
        "hands": [result.to_json() for result in state.results],
    }
    if ending is not None and ending.reason == "void":
        out["void_reason"] = ending.detail  # the name Spectacular Bid and both views use
    elif ending is not None:
        out["reason"] = ending.reason
        if ending.flagged is not None:
            out["flagged"] = ending.flagged
    return out


def _deal(state: State, deal: object, now: Millis) -> tuple[State, tuple[Event, ...]]:
    if not isinstance(deal, Deal):
        raise IllegalAction("chance only deals")
    if state.hand is not None:
        raise IllegalAction("a hand is in progress: there is nothing to deal")
    hand = begin(state.table, state.dealer, deal)
    clock = None if state.clock is None else state.clock.start(hand.turn, now)
    after = State(state.table, state.scores, state.dealer, hand, state.results, clock)
    return after, (Event("deal", state.dealer),)


def _scored(
    state: State, result: HandResult, now: Millis, events: tuple[Event, ...]
) -> tuple[State, tuple[Event, ...]]:
    """A hand is over (played, abandoned or all passed): score it, then F-9 or the next dealer."""
    scores = settle(state.scores, result)
    ending = by_score(scores)
    clock = None if state.clock is None else state.clock.stop(now)
    dealer = Seat((state.dealer + 1) % state.table.seats)  # F-2: the deal rotates left
    after = State(state.table, scores, dealer, None, (*state.results, result), clock, ending)
    events = (*events, Event("hand", None, {**result.to_json(), "scores": list(scores)}))
    if ending is not None:
        events = (*events, _over(ending))
    return after, events


def _decider(hand: Bidding | Contract | Tricks) -> Seat:
    """Whose decision the game waits for (the seat whose clock runs)."""
    if isinstance(hand, Contract):
        return hand.declarer
    return hand.turn


def _over(ending: Ending) -> Event:
    return Event("game_over", None, {"reason": ending.reason, "winners": list(ending.winners)})


def _ended(ending: Ending) -> str:
    if ending.reason == "void":
        return f"voided: {ending.detail}"
    if ending.reason == "time":
        return f"seat {ending.flagged} ran out of time"
    return "a score reached zero"


_VERBS = {
    Look: "look at your cards",
    Bid: "bid",
    Pass: "pass",
    Abandon: "abandon",
    Declare: "declare",
    Play: "play",
}


def _out_of_phase(hand: Bidding | Contract | Tricks | None, action: object) -> str:
    verb = _VERBS.get(type(action))
    if verb is None:
        return f"not a 501 action: {action!r}"
    if hand is None:
        return f"you cannot {verb} now: the next hand has not been dealt yet"
    if isinstance(action, Look):
        return "your cards are already face up: everyone sees their own cards once the bidding ends (F-4)"
    if isinstance(hand, Bidding):
        return f"you cannot {verb} now: the bidding is in progress, seat {hand.turn} bids next"
    if isinstance(hand, Contract):
        return f"you cannot {verb} now: seat {hand.declarer} won the bidding and must declare or abandon"
    return f"you cannot {verb} now: the tricks are being played, seat {hand.turn} plays next"
