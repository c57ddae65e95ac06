"""One behavioural suite for every `Storage`: memory (the reference), SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.storage_backends import BACKENDS, Backend, backend_for, run
from workers.storage import SNAPSHOT_FORMAT, FencedOut, LogEntry, MatchEntry, Progress, Snapshot, Storage, Stored

P, Q = 7, 200


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Backend]:
    with backend_for(request.param, tmp_path) as b:
        yield b


def match(match_id: str, partition: int = P, players: tuple[str, ...] = ("ann", "bob")) -> MatchEntry:
    tokens = tuple(bytes([i]) * 32 for i in range(len(players)))
    options: dict[str, Any] = {"clock": False, "target": 501}
    return MatchEntry(match_id, "501", players, options, tokens, 1_700_000_000_123, 1, partition)


def step(seq: int, kind: str = "command", seat: int | None = 0) -> LogEntry:
    return LogEntry(seq, seq, kind, seat, {"play": f"card-{seq}", "nested": {"list": [1, "zwei", None]}}, 1000 * seq)


RUNNING = Progress("in_progress", None, 1_700_000_060_000, True)


def test_create_append_log_round_trip(backend: Backend) -> None:
    async def body() -> None:
        s = await backend.open()
        epoch = (await s.claim("w0", [P]))[P]
        entry = MatchEntry("m1", "spectacular-bid", ("ann", "bob", "ann"), {"bank_ms": 60000, "ü": "ß"},
                           (b"\x00" * 32, b"\xff" * 32, b"\x01" * 32), 1_700_000_000_000, 2, P)  # fmt: skip
        await s.create(entry, epoch)
        steps = [
            step(1),
            LogEntry(2, 1, "deal", None, {"deal": [[1, 2], [3, 4]], "salt": "ab" * 16}, 1500),
            LogEntry(3, 2, "deadline", None, {}, 61_000),
            LogEntry(4, 3, "command", 1, {"zeta": 1, "alpha": {"y": 2, "b": [3]}, "mid": "ü"}, 62_000),
            step(5, seat=2),
        ]
        for i, e in enumerate(steps):
            await s.append("m1", P, epoch, e, RUNNING if i < 4 else Progress(deadline_unix_ms=5))
        assert await s.log("m1") == steps
        # A document comes back as written, keys in order (records and commitments depend on it).
        assert [list(e.action) for e in await s.log("m1")] == [list(e.action) for e in steps]
        assert list((await s.log("m1"))[3].action["alpha"]) == ["y", "b"]
        assert await s.log("nope") == []
        [stored] = await s.unfinished([P])
        assert stored == Stored(entry, None, tuple(steps), Progress(deadline_unix_ms=5))
        await s.close()

    run(body)


def test_seq_unique_and_increasing(backend: Backend) -> None:
    async def body() -> None:
        s = await backend.open()
        epoch = (await s.claim("w0", [P]))[P]
        await s.create(match("m1"), epoch)
        await s.append("m1", P, epoch, step(1), RUNNING)
        with pytest.raises(ValueError, match="seq 1 after 1"):
            await s.append("m1", P, epoch, step(1, seat=1), Progress("finished"))
        with pytest.raises(ValueError):
            await s.append("m1", P, epoch, step(0), Progress("finished"))
        assert await s.log("m1") == [step(1)]
        [stored] = await s.unfinished([P])
        assert stored.progress == RUNNING  # the refused appends changed nothing
        await s.append("m1", P, epoch, step(3), RUNNING)  # gaps are allowed, going back is not
        assert [e.seq for e in await s.log("m1")] == [1, 3]
        with pytest.raises(KeyError):
            await s.append("ghost", P, epoch, step(1), RUNNING)
        assert await s.log("ghost") == []
        await s.close()

    run(body)


def test_append_all_commits_every_entry_or_none(backend: Backend) -> None:
    """A command and the deal it calls for are one `append_all`: both are logged, or (one out of sequence,
    fenced out) neither is, and the progress moves only with them."""

    async def body() -> None:
        s = await backend.open()
        epoch = (await s.claim("w0", [P]))[P]
        await s.create(match("m1"), epoch)
        dealt = Progress("in_progress", None, 1_700_000_090_000, True)
        await s.append_all("m1", P, epoch, [step(1), step(2, "deal", None)], dealt)
        with pytest.raises(ValueError, match="seq 3 after 3"):
            await s.append_all("m1", P, epoch, [step(3), step(3, "deal", None)], Progress("finished"))
        with pytest.raises(ValueError, match="seq 2 after 2"):
            await s.append_all("m1", P, epoch, [step(2), step(4)], Progress("finished"))
        moved = (await s.claim("w1", [P]))[P]
        with pytest.raises(FencedOut):
            await s.append_all("m1", P, epoch, [step(3), step(4, "deal", None)], Progress("finished"))
        assert await s.log("m1") == [step(1), step(2, "deal", None)]
        [stored] = await s.unfinished([P])
        assert stored.progress == dealt
        await s.append_all("m1", P, moved, [step(3), step(4, "deal", None)], RUNNING)
        assert [e.seq for e in await s.log("m1")] == [1, 2, 3, 4]
        await s.close()

    run(body)


def test_unfinished_snapshot_later_entries_and_filters(backend: Backend) -> None:
    async def body() -> None:
        s = await backend.open()
        epochs = await s.claim("w0", [P, Q])
        for match_id, partition in [("a", P), ("b", P), ("fin", P), ("void", P), ("other", Q)]:
            await s.create(match(match_id, partition), epochs[partition])
            for seq in range(1, 5):
                await s.append(match_id, partition, epochs[partition], step(seq), RUNNING)
        await s.snapshot("a", P, epochs[P], Snapshot(1, SNAPSHOT_FORMAT + b"old"))
        await s.snapshot("a", P, epochs[P], Snapshot(2, SNAPSHOT_FORMAT + b"\x80pickled\x00match"))
        await s.snapshot("b", P, epochs[P], Snapshot(3, b"\x80an older code's snapshot"))
        await s.append("fin", P, epochs[P], step(5), Progress("finished"))
        await s.append("void", P, epochs[P], step(5), Progress("voided", "worker_down"))

        found = {st.entry.match_id: st for st in await s.unfinished([P])}
        assert sorted(found) == ["a", "b"]
        assert found["a"].snapshot == Snapshot(2, SNAPSHOT_FORMAT + b"\x80pickled\x00match")
        assert found["a"].entries == (step(3), step(4))
        assert found["b"].snapshot is None  # not in this code's format: the whole log instead
        assert found["b"].entries == tuple(step(i) for i in range(1, 5))
        assert (await s.load("b")) == found["b"]
        assert found["a"].entry == match("a") and found["a"].progress == RUNNING
        assert sorted(st.entry.match_id for st in await s.unfinished([P, Q])) == ["a", "b", "other"]
        assert [st.entry.match_id for st in await s.unfinished([Q])] == ["other"]
        assert await s.unfinished([3]) == []
        assert await s.unfinished([]) == []
        # A finished or voided match keeps its whole log for watchers and records.
        assert len(await s.log("void")) == 5
        await s.close()

    run(body)


def test_claim_increments_epochs(backend: Backend) -> None:
    async def body() -> None:
        s = await backend.open()
        assert await s.claim("w0", [1, 2, 3]) == {1: 1, 2: 1, 3: 1}
        assert await s.claim("w1", [2]) == {2: 2}
        assert await s.claim("w0", [3, 2]) == {3: 2, 2: 3}
        assert await s.claim("w0", []) == {}
        await s.close()

    run(body)


def test_fencing_refuses_the_stale_owner(backend: Backend) -> None:
    async def body() -> None:
        s = await backend.open()
        old = (await s.claim("w-old", [P]))[P]
        await s.create(match("m1"), old)
        await s.append("m1", P, old, step(1), RUNNING)
        new = (await s.claim("w-new", [P]))[P]
        assert new == old + 1

        with pytest.raises(FencedOut, match="w-new"):
            await s.append("m1", P, old, step(2), Progress("finished"))
        with pytest.raises(FencedOut):
            await s.snapshot("m1", P, old, Snapshot(1, b"stale"))
        with pytest.raises(FencedOut):
            await s.create(match("m2"), old)
        [stored] = await s.unfinished([P])  # nothing of the stale owner's was written
        assert stored.entry.match_id == "m1" and stored.snapshot is None
        assert stored.entries == (step(1),) and stored.progress == RUNNING
        assert await s.log("m2") == []

        await s.append("m1", P, new, step(2), RUNNING)
        await s.snapshot("m1", P, new, Snapshot(2, b"new"))
        await s.create(match("m2"), new)
        assert await s.log("m1") == [step(1), step(2)]
        assert sorted(st.entry.match_id for st in await s.unfinished([P])) == ["m1", "m2"]
        # An epoch from the future is as wrong as a stale one; an unclaimed partition has epoch 0.
        with pytest.raises(FencedOut):
            await s.append("m1", P, new + 1, step(3), RUNNING)
        await s.create(match("free", partition=Q), 0)
        with pytest.raises(FencedOut):
            await s.create(match("free2", partition=Q), 1)
        await s.close()

    run(body)


def test_group_commit_200_concurrent_appends_are_durable(backend: Backend) -> None:
    async def body() -> None:
        s = await backend.open()
        epochs = await s.claim("w0", [P, Q])
        ids = [f"m{i:02}" for i in range(50)]
        await asyncio.gather(*(s.create(match(m, P if i % 2 else Q), epochs[P if i % 2 else Q])
                               for i, m in enumerate(ids)))  # fmt: skip
        appends = [
            s.append(m, P if i % 2 else Q, epochs[P if i % 2 else Q], step(seq), RUNNING)
            for seq in range(1, 5)
            for i, m in enumerate(ids)
        ]
        assert len(appends) == 200
        await asyncio.gather(*appends)
        await s.close()

        again = await backend.open()
        for m in ids:
            assert await again.log(m) == [step(seq) for seq in range(1, 5)], m
        assert len(await again.unfinished([P, Q])) == 50
        await again.close()

    run(body)


def test_a_fenced_entry_fails_alone_among_concurrent_appends(backend: Backend) -> None:
    async def body() -> None:
        s = await backend.open()
        epochs = await s.claim("w0", [P, Q])
        await s.create(match("p"), epochs[P])
        await s.create(match("q", Q), epochs[Q])
        moved = (await s.claim("w1", [Q]))[Q]
        results = await asyncio.gather(
            *(s.append("p", P, epochs[P], step(seq), RUNNING) for seq in range(1, 11)),
            s.append("q", Q, epochs[Q], step(1), RUNNING),
            *(s.append("p", P, epochs[P], step(seq), RUNNING) for seq in range(11, 21)),
            s.append("q", Q, moved, step(1, seat=1), RUNNING),
            return_exceptions=True,
        )
        assert [type(r).__name__ for r in results] == ["NoneType"] * 10 + ["FencedOut"] + ["NoneType"] * 11
        assert [e.seq for e in await s.log("p")] == list(range(1, 21))
        assert await s.log("q") == [step(1, seat=1)]
        await s.close()

    run(body)


def test_heartbeats(backend: Backend) -> None:
    async def body() -> None:
        s: Storage = await backend.open()
        assert await s.last_heartbeat([1, 2]) is None
        await s.claim("w0", [1])
        await s.claim("w1", [2])
        assert await s.last_heartbeat([1, 2]) is None  # owners, but no heartbeat yet
        await s.heartbeat("w0", 1_000)
        await s.heartbeat("w1", 2_000)
        await s.heartbeat("w2", 9_000)  # owns nothing
        assert await s.last_heartbeat([1]) == 1_000
        assert await s.last_heartbeat([1, 2]) == 2_000
        assert await s.last_heartbeat([3]) is None
        await s.heartbeat("w0", 3_000)
        assert await s.last_heartbeat([1, 2]) == 3_000
        await s.claim("w2", [1])  # now w2's heartbeat speaks for partition 1
        assert await s.last_heartbeat([1]) == 9_000
        await s.close()

    run(body)


def test_a_match_is_created_once_and_only_a_known_match_takes_a_snapshot(backend: Backend) -> None:
    """Both ask the log which matches exist (`writes._existing` on SQL): a second create of one id is refused
    and changes nothing (the memory log overwrote the first match and its log until 12-07); a snapshot of a
    match never created is refused on SQL (the memory log, whose service takes no snapshots, does not check);
    one of a known match is kept."""

    async def body() -> None:
        s = await backend.open()
        epoch = (await s.claim("w0", [P]))[P]
        await s.create(match("m1"), epoch)
        with pytest.raises(ValueError, match="exists already"):
            await s.create(match("m1", players=("cy", "di")), epoch)
        await s.create(match("m2"), epoch)
        if backend.url is not None:
            with pytest.raises(KeyError):
                await s.snapshot("nobody", P, epoch, Snapshot(1, SNAPSHOT_FORMAT + b"x"))
        await s.snapshot("m2", P, epoch, Snapshot(1, SNAPSHOT_FORMAT + b"kept"))
        found = {stored.entry.match_id: stored for stored in await s.unfinished([P])}
        assert found["m1"].entry.players == ("ann", "bob")
        assert found["m2"].snapshot == Snapshot(1, SNAPSHOT_FORMAT + b"kept")
        await s.close()

    run(body)
