"""Scoring a hand (F-5 abandon, F-8) and the end of the game (F-9, and the time limit)."""

from __future__ import annotations

from workers.games.engine import Seat
from workers.games.five_oh_one.state import Contract, Ending, HandResult, Tricks

ABANDON_PENALTY = 25  # F-5: each opponent subtracts 25


def all_passed(dealer: Seat, seats: int) -> HandResult:
    """F-3: nobody bid; the hand scores zero for everyone."""
    zeros = (0,) * seats
    return HandResult(dealer, None, None, None, None, False, False, False, zeros, zeros)


def abandoned(hand: Contract, opponents: tuple[Seat, ...], seats: int) -> HandResult:
    """F-5: the declarer adds their bid (doubled if blind), each opponent subtracts 25."""
    deltas = [0] * seats
    deltas[hand.declarer] = hand.bid * (2 if hand.blind else 1)
    for seat in opponents:
        deltas[seat] = -ABANDON_PENALTY
    return HandResult(
        hand.dealer, hand.declarer, hand.bid, None, None, hand.blind, True, False, (0,) * seats, tuple(deltas)
    )


def played(hand: Tricks, seats: int) -> HandResult:
    """F-8: card points plus valid marriages; the declarer ∓ the target (×2 blind), defenders − points."""
    terms = hand.terms
    won = {trick.winner for trick in hand.done}
    points = list(hand.taken)
    for marriage in hand.marriages:
        if marriage.seat in won:  # F-7: only if the announcer wins a trick, before or after
            points[marriage.seat] += marriage.value
    declarer = terms.declarer
    made = points[declarer] >= terms.target
    deltas = [-p for p in points]
    deltas[declarer] = (-terms.target if made else terms.target) * (2 if terms.blind else 1)
    return HandResult(
        terms.dealer,
        declarer,
        terms.bid,
        terms.target,
        terms.trump,
        terms.blind,
        False,
        made,
        tuple(points),
        tuple(deltas),
    )


def settle(scores: tuple[int, ...], result: HandResult) -> tuple[int, ...]:
    return tuple(score + delta for score, delta in zip(scores, result.deltas, strict=True))


def by_score(scores: tuple[int, ...]) -> Ending | None:
    """F-9: after a hand, anyone at zero or below ends the game; the lowest wins, exact ties share."""
    low = min(scores)
    if low > 0:
        return None
    return Ending("score", tuple(Seat(s) for s, score in enumerate(scores) if score == low))


def by_time(scores: tuple[int, ...], flagged: Seat) -> Ending:
    """The flagged player loses (ranked last); the lowest score among the others wins, ties share."""
    low = min(score for s, score in enumerate(scores) if s != flagged)
    winners = tuple(Seat(s) for s, score in enumerate(scores) if s != flagged and score == low)
    return Ending("time", winners, flagged)
