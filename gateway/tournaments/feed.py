"""The pushed streams of a tournament: a player's assignment (WatchAssignment) and the public page
(WatchTournament). Each stream re-reads the tournament when this process changes it (`changes.CHANGES`)
and at least every POLL_S (changes made by other processes), and sends a message only when what it shows
has changed."""

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

M = TypeVar("M", bound=Message)


async def pushed(
    director: Director, tournament_id: str, build: Callable[[store.Snapshot], M], last: Callable[[M], bool]
) -> AsyncIterator[M]:
    """`build(snapshot)` at once, then again whenever its bytes change; ends after a message `last` says ends it."""
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
            try:
                await asyncio.wait_for(wake.wait(), POLL_S)
                fresh = True
            except TimeoutError:
                fresh = False


def next_round_unix_ms(snap: store.Snapshot, now_unix_ms: int) -> int:
    """When the next round's clocks start: the first round created and still held; 0 when none is."""
    held = [r.starts_unix_ms for r in reports.round_summaries(snap, now_unix_ms) if r.status == "scheduled"]
    return min(held, default=0)
