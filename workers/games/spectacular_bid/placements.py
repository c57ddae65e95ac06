"""Spectacular Bid's per-seat result: the winner first, the loser second (a duel has no shared place),
each with the final balance (SB-1). One ranking for a state and for an outcome read back from storage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workers.games.engine import JSON, Placement, Seat, placed
from workers.games.spectacular_bid.state import Phase, State


def ranked(winner: Seat | None, balances: Sequence[int]) -> tuple[Placement, ...] | None:
    """Places from the winner and the final balances; None without a winner (no result)."""
    if winner is None:
        return None
    return placed([(0,) if seat == winner else (1,) for seat in range(len(balances))], balances)


def placements(state: State) -> tuple[Placement, ...] | None:
    if state.phase is not Phase.OVER or state.void_reason is not None:
        return None
    return ranked(state.winner, state.points)


def placements_of(outcome: Mapping[str, JSON]) -> tuple[Placement, ...] | None:
    """The placements an outcome (RECORDS.md, as `outcome` wrote it) shows."""
    winner = outcome.get("winner")
    if outcome.get("status") != "finished" or not isinstance(winner, int):
        return None
    return ranked(Seat(winner), [int(x) for x in outcome["points"]])
