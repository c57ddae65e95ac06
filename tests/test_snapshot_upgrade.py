"""A rolling upgrade: a worker of this code takes over matches whose snapshots an older worker pickled.

`tests/golden/snapshots/*.json` hold, for each game, a match's log and a snapshot after its 20th step as
older code pickled it: `<game>.json` the engine before fast-built values, `<game>.format2.json` format 2
(the command log as `Step` values; written by `git show 19df53b`'s code). Neither thaws now. Through each
storage, the new code must read such a match from its whole log — the same match, its record unchanged —
and write its own snapshots in the current format. `<game>.format3-dataclasses.json`: the current format as
eae1036's code pickled it (values without fields, and the deals' commitments, through the frozen dataclasses'
own `__getstate__`): it still thaws, so a rolling deploy's new worker takes such matches over from their
snapshots; what this code pickles calls each value's constructor.
"""

from __future__ import annotations

import base64
import json
import pickletools
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablehall.selfplay import self_play
from tests.storage_backends import BACKENDS, Backend, backend_for, run
from workers.commitments import Commitment
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


def _opcodes(blob: bytes) -> set[str]:
    return {op.name for op, _, _ in pickletools.genops(blob[len(SNAPSHOT_FORMAT) :])}


@pytest.mark.parametrize("name", ["spectacular-bid", "501"])
def test_a_snapshot_of_this_format_pickled_the_dataclasses_way_still_thaws(name: str) -> None:
    saved = golden(name, ".format3-dataclasses")
    game = game_named(name)
    assert game is not None
    old = Snapshot(saved["snapshot"]["seq"], base64.b64decode(saved["snapshot"]["blob_base64"]))
    assert old.current and "NEWOBJ" in _opcodes(old.blob), "the golden file holds values pickled the old way"
    thawed = Position.thaw(game, old)
    assert thawed.record(saved["entry"]["match_id"]) == saved["final"]
    assert thawed.logged == len(saved["entries"])


@pytest.mark.parametrize("name", ["spectacular-bid", "501"])
def test_every_value_in_a_snapshot_pickles_as_its_constructors_call(name: str) -> None:
    """Whole self-played matches, frozen every few steps: no value goes through a frozen dataclass's own
    `__getstate__` (NEWOBJ), which reads its fields anew for every object; and each thaws to the same match."""
    game = game_named(name)
    assert game is not None
    players = ["a", "b", "c"] if name == "501" else ["a", "b"]
    for seed in range(3):
        turns = list(self_play(game, players, random.Random(seed)))
        commitments = [Commitment.of({"deal": n}) for n in range(3)]
        for turn in turns[::7] + turns[-1:]:
            position = Position(turn.match, commitments, 0, 0)
            blob = position.freeze()
            assert "NEWOBJ" not in _opcodes(blob) and "NEWOBJ_EX" not in _opcodes(blob)
            thawed = Position.thaw(game, Snapshot(0, blob))
            assert thawed.match.state == turn.match.state and thawed.commitments == commitments
            assert thawed.match.record() == turn.match.record()
