"""The flow of a match shared by the auction and the play: new decisions, transfers, ends of rounds."""

from __future__ import annotations

from workers.games.engine import Millis, Seat
from workers.games.spectacular_bid.state import DEAL, OVER, Phase, Round, State, other
from workers.games.values import evolve


def decide(
    state: State,
    seat: Seat,
    now: Millis,
    points: tuple[int, int] | None = None,
    round: Round | None = None,
    phase: Phase | None = None,
) -> State:
    """A truly new decision for `seat` (SB-10): fresh delay, or a hand-over pause on a shared device.
    `points`, `round` and `phase`, when given, are the move's own changes to `state`, made in the same copy."""
    if state.options.shared_device and state.holder != seat:
        clock, hand_over = state.clock.stop(now), True
    else:
        clock, hand_over = state.clock.start(seat, now), False
    return state.moved_on(seat, clock, hand_over, points, round, phase)


def moved(points: tuple[int, int], to: Seat, amount: int) -> tuple[int, int]:
    """SB-1: points pass from the other player to `to`, never more than the payer has."""
    payer = other(to)
    moved = min(amount, points[payer])
    return (points[0] + moved, points[1] - moved) if to == 0 else (points[0] - moved, points[1] + moved)


def end_round(state: State, now: Millis) -> State:
    assert state.round is not None
    return evolve(
        state,
        phase=DEAL,
        past=(*state.past, state.round),
        round=None,
        turn=None,
        clock=state.clock.stop(now),
        hand_over=False,
        paused_at=now,
    )


def finish(state: State, winner: Seat, reason: str, round_end: str) -> State:
    round = state.round
    if round is not None and round.end is None:
        round = evolve(round, end=round_end)
    return evolve(state, phase=OVER, round=round, winner=winner, reason=reason, hand_over=False)


def over_message(state: State) -> str:
    if state.void_reason is not None:
        return f"the match was voided ({state.void_reason})"
    return f"the match is over: seat {state.winner} won on {state.reason}"

