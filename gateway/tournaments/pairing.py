"""Heavy tournament work runs in the process pools of `workers.offload` (never on the clocks' event loop or
in their process), a pool each, so a long pairing never queues a replay:

- `plan`: a round's plan (Swiss pairing above all: seconds of pure Python for a large field);
- `records`: the records of ended tables for `ExportRecords`, each match's log replayed by the engine.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures.process import BrokenProcessPool

from sqlalchemy import Engine

from gateway.tournaments import rounds, store
from gateway.tournaments.rounds import History, Plan, Settings
from workers import offload
from workers.errors import Unavailable

__all__ = ["History", "PairingFailed", "plan", "records", "shutdown"]

class PairingFailed(Unavailable):
    """The pairing process could not plan the round (it died, or the plan raised): the message says why.
    Nothing was written; the periodic pass (or the organizer's next call) pairs the round again."""


async def plan(settings: Settings, history: History, number: int) -> Plan:
    """`rounds.plan` in the pairing pool. PairingFailed if its process died or the plan raised."""
    try:
        return await offload.run("pairing", rounds.plan, settings, history, number)
    except BrokenProcessPool:
        raise PairingFailed(f"round {number}: the pairing process stopped; the next pass pairs it again") from None
    except Exception as error:
        raise PairingFailed(f"round {number} could not be paired: {type(error).__name__}: {error}") from error


async def records(engine: Engine, match_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """Status and record JSON of each ended match among `match_ids`, replayed in the replays pool (which
    opens the same database by its URL). Unavailable if its process died."""
    url = engine.url.render_as_string(hide_password=False)
    try:
        return await offload.run("replays", _records, url, list(match_ids))
    except BrokenProcessPool:
        raise Unavailable("the process replaying the records stopped: ask again") from None


def _records(url: str, match_ids: list[str]) -> dict[str, tuple[str, str]]:
    from workers.sql.migrate import engine_for

    found = store.ended_records(engine_for(url), match_ids)
    return {m: (r.status, json.dumps(r.record())) for m, r in found.items()}


def shutdown() -> None:
    """Stop the pools (the process is ending); a later call makes new ones."""
    offload.shutdown()
