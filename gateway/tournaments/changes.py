"""Wakes the streams that follow a tournament (WatchTournament, WatchAssignment) when this process changes
it. Changes made by another process (a Celery task, another gateway) are found by the streams' own
periodic re-read (`feed.POLL_S`), so a lost wake-up costs at most that long."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager


class Changes:
    def __init__(self) -> None:
        self.listeners: dict[str, set[asyncio.Event]] = {}

    def notify(self, tournament_id: str | None) -> None:
        """Something shown about this tournament may have changed."""
        for wake in self.listeners.get(tournament_id or "", ()):
            wake.set()

    @contextmanager
    def listening(self, tournament_id: str) -> Iterator[asyncio.Event]:
        """An event set on every change of the tournament while the block runs."""
        wake = asyncio.Event()
        self.listeners.setdefault(tournament_id, set()).add(wake)
        try:
            yield wake
        finally:
            found = self.listeners.get(tournament_id)
            if found is not None:
                found.discard(wake)
                if not found:
                    del self.listeners[tournament_id]


CHANGES = Changes()
"""One per process: every director of the process (the service's, the embedded jobs') tells it."""
