"""501♠'s per-seat result: lowest final score first, exact ties sharing a place, and a seat whose
decision limit ran out last (F-9). One ranking for a state and for an outcome read back from storage."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workers.games.engine import JSON, Placement, Seat, placed
from workers.games.five_oh_one.state import State


def ranked(scores: Sequence[int], flagged: Seat | None) -> tuple[Placement, ...]:
    """Places from the final scores and the seat that ran out of time, if one did."""
    return placed([(1 if seat == flagged else 0, score) for seat, score in enumerate(scores)], scores)


def placements(state: State) -> tuple[Placement, ...] | None:
    ending = state.ending
    if ending is None or ending.reason == "void":
        return None
    return ranked(state.scores, ending.flagged)


def placements_of(outcome: Mapping[str, JSON]) -> tuple[Placement, ...] | None:
    """The placements an outcome (RECORDS.md, as `outcome` wrote it) shows."""
    if outcome.get("status") != "finished":
        return None
    flagged = outcome.get("flagged")
    return ranked([int(x) for x in outcome["scores"]], Seat(flagged) if isinstance(flagged, int) else None)
