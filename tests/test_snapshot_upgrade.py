"""A rolling upgrade: a worker of this code takes over matches whose snapshots an older worker pickled.

`tests/golden/snapshots/*.json` hold, for each game, a match's log and a snapshot after its 20th step as
older code pickled it: `<game>.json` the engine before fast-built values, `<game>.format2.json` format 2
(the command log as `Step` values; written by `git show 19df53b`'s code). Neither thaws now. Through each
storage, the new code must read such a match from its whole log — the same match, its record unchanged —
and write its own snapshots in the current format.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.storage_backends import BACKENDS, Backend, backend_for, run
from workers.games.catalog import game_named
from workers.replay_log import Position, restored
from workers.storage import SNAPSHOT_FORMAT, LogEntry, MatchEntry, Progress, Snapshot

GOLDEN = Path(__file__).parent / "golden" / "snapshots"
P = 3
RUNNING = Progress("in_progress", None, None, False)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with backend_for(request.param, tmp_path) as b:
        yield b


VINTAGES = ["", ".format2"]
"""The golden files' suffixes: one per older snapshot format."""


def golden(name: str, vintage: str = "") -> dict[str, Any]:
    return dict(json.loads((GOLDEN / f"{name}{vintage}.json").read_text()))


def entry_of(saved: dict[str, Any]) -> MatchEntry:
    e = saved["entry"]
    tokens = tuple(bytes([i + 1]) * 32 for i in range(len(e["players"])))
    return MatchEntry(e["match_id"], e["game"], tuple(e["players"]), {}, tokens, e["created_unix_ms"], e["lot"], P)


def comparable(record: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k not in ("match_id", "commitments")}


@pytest.mark.parametrize("vintage", VINTAGES)
@pytest.mark.parametrize("name", ["spectacular-bid", "501"])
def test_an_older_snapshot_cannot_be_thawed_and_says_why(name: str, vintage: str) -> None:
    saved = golden(name, vintage)
    game = game_named(name)
    assert game is not None
    old = Snapshot(saved["snapshot"]["seq"], base64.b64decode(saved["snapshot"]["blob_base64"]))
    assert not old.current
    with pytest.raises(ValueError, match="format"):
        Position.thaw(game, old)


@pytest.mark.parametrize("vintage", VINTAGES)
@pytest.mark.parametrize("name", ["spectacular-bid", "501"])
def test_a_match_with_an_older_snapshot_is_read_from_its_whole_log(backend: Backend, name: str, vintage: str) -> None:
    saved = golden(name, vintage)
    game = game_named(name)
    assert game is not None
    entry = entry_of(saved)
    entries = [LogEntry(**e) for e in saved["entries"]]
    old = Snapshot(saved["snapshot"]["seq"], base64.b64decode(saved["snapshot"]["blob_base64"]))

    async def body() -> None:
        s = await backend.open()
        epoch = (await s.claim("new-worker", [P]))[P]
        await s.create(entry, epoch)
        for logged in entries:
            await s.append(entry.match_id, P, epoch, logged, RUNNING)
        await s.snapshot(entry.match_id, P, epoch, old)

        [stored] = await s.unfinished([P])
        assert stored.snapshot is None and stored.entries == tuple(entries)
        position = restored(game, stored)
        assert comparable(position.record(entry.match_id)) == comparable(saved["final"])

        # the new worker's own snapshot is in the current format and thaws to the same match
        current = Snapshot(len(entries), position.freeze())
        assert current.blob.startswith(SNAPSHOT_FORMAT)
        await s.snapshot(entry.match_id, P, epoch, current)
        again = await s.load(entry.match_id)
        assert again is not None and again.snapshot == current and again.entries == ()
        assert comparable(restored(game, again).record(entry.match_id)) == comparable(saved["final"])
        await s.close()

    run(body)
