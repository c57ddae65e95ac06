"""The pushed streams of a tournament: a player's assignment (WatchAssignment) and the public page
(WatchTournament). Each stream re-reads the tournament when this process changes it (`changes.CHANGES`),
at least every POLL_S (changes made by other processes), and at the instant a delayed result may be shown
(a timer on the stream's side, not the client's), and sends a message only when what it shows has changed."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import TypeVar

from google.protobuf.message import Message

from gateway.tournaments import reports, store
from gateway.tournaments.changes import CHANGES
from gateway.tournaments.director import Director

POLL_S = 1.0
"""The longest a stream goes without re-reading its tournament (another process may have changed it)."""
REVEAL_WAIT_S = 0.01
"""The shortest wait for a delayed result's instant (a clock that stands still, as a test's may, is read
again at most this often; a real one shows the result at most this late)."""

M = TypeVar("M", bound=Message)


async def pushed(
    director: Director,
    tournament_id: str,
    build: Callable[[store.Snapshot], M],
    last: Callable[[M], bool],
    due: Callable[[store.Snapshot], int | None] | None = None,
) -> AsyncIterator[M]:
    """`build(snapshot)` at once, then again whenever its bytes change; ends after a message `last` says ends it.
    `due(snapshot)`: the director's clock reading at which the message changes by the clock alone (a delayed
    result shown), when the stream wakes by itself."""
    sent = b""
    with CHANGES.listening(tournament_id) as wake:
        fresh = False
        while True:
            wake.clear()
            snap = await director.recent_snapshot(tournament_id, 0 if fresh else None)
            message = build(snap)
            shown = message.SerializeToString(deterministic=True)
            if shown != sent:
                sent = shown
                yield message
            if last(message):
                return
            wait_s = POLL_S
            reveal = None if due is None else due(snap)
            if reveal is not None:
                wait_s = min(wait_s, max(REVEAL_WAIT_S, (reveal - director.clock()) / 1000))
            try:
                await asyncio.wait_for(wake.wait(), wait_s)
                fresh = True
            except TimeoutError:
                fresh = False


def next_round_unix_ms(snap: store.Snapshot, now_unix_ms: int) -> int:
    """When the next round's clocks start: the first round created and still held; 0 when none is."""
    held = [r.starts_unix_ms for r in reports.round_summaries(snap, now_unix_ms) if r.status == "scheduled"]
    return min(held, default=0)
