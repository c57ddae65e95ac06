"""Each match's spectator delay, read from its tournament (gateway/spectators.py asks): a tournament's delay
is set when it is created and never changes, so each match's answer is kept (a bounded number of them)."""

from __future__ import annotations

import asyncio
from collections import OrderedDict

from gateway.tournaments import store
from gateway.tournaments.errors import NoDatabase
from gateway.tournaments.service import database_engine

KEPT = 100_000
"""Matches whose delay is remembered (the least recently asked are forgotten first)."""


class TournamentDelays:
    def __init__(self) -> None:
        self.known: OrderedDict[str, int] = OrderedDict()

    async def __call__(self, match_id: str) -> int:
        """How late spectators see `match_id`, in ms: its tournament's delay; 0 for any other match."""
        if match_id in self.known:
            self.known.move_to_end(match_id)
            return self.known[match_id]
        try:
            engine = await database_engine()
        except NoDatabase:
            return 0  # no tournaments without a database: every match is live
        delay = await asyncio.to_thread(store.spectator_delay_ms, engine, match_id)
        self.known[match_id] = delay
        if len(self.known) > KEPT:
            self.known.popitem(last=False)
        return delay

    async def origin_ms(self, match_id: str) -> int:
        """The match's time origin, read when its record is asked for (only of delayed matches)."""
        return int(await asyncio.to_thread(store.origin_ms, await database_engine(), match_id))

    async def insider(self, match_id: str, token_sha256: bytes) -> bool:
        """A seat of the table (its player's tournament token) or the key of the tournament's organizer."""
        return bool(await asyncio.to_thread(store.insider, await database_engine(), match_id, token_sha256))
