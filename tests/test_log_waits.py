"""Where a durable write's wait goes (`tablehall_event_log_wait_seconds_total` by phase, workers/sql/batching.py
`waited`): each phase summed over a batch's ops, a clock read backwards counting nothing; every write of a real
storage counted once, on SQLite and PostgreSQL, with its writer a thread or a process, its phases adding up to
no more than the callers waited; and `tablehall bench service` reading them back from an exposition
(tablehall/bench_commits.py)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path

import pytest
from prometheus_client import REGISTRY, generate_latest

from tablehall.bench_commits import Waits
from tests.durability import DB_BACKENDS, database
from workers.metrics import LOG_PHASES
from workers.sql import SqlStorage
from workers.sql.batching import GroupCommitter, Op, waited
from workers.sql.writer_process import ProcessCommitter
from workers.storage import LogEntry, MatchEntry, Progress

BOUND_S = 60.0


def _counted() -> tuple[float, tuple[float, ...]]:
    """The writes counted so far in this process, and their seconds by phase."""
    writes = REGISTRY.get_sample_value("tablehall_event_log_writes_total") or 0.0
    phases = tuple(
        REGISTRY.get_sample_value("tablehall_event_log_wait_seconds_total", {"phase": phase}) or 0.0
        for phase in LOG_PHASES
    )
    return writes, phases


def _op(submitted: float, handed: float) -> Op:
    op = Op()
    op.submitted, op.handed = submitted, handed
    return op


def test_each_phase_of_a_batch_is_summed_over_its_ops_and_a_clock_read_backwards_counts_nothing() -> None:
    writes, phases = _counted()
    waited([_op(1.0, 3.0), _op(2.0, 3.0)], began=3.5, ended=4.5, answered=7.0)
    after_writes, after = _counted()
    assert after_writes - writes == 2
    assert [b - a for a, b in zip(phases, after, strict=True)] == pytest.approx([3.0, 1.0, 2.0, 5.0])
    waited([_op(5.0, 4.0)], began=3.9, ended=3.8, answered=3.7)  # every span backwards: another process's tick
    assert _counted() == (after_writes + 1, after)


@pytest.fixture(params=[(backend, writer) for backend in DB_BACKENDS for writer in ("thread", "process")],
                ids=lambda p: "-".join(p))  # fmt: skip
def storage(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, type]]:
    """A migrated database's URL, and the writer its storage is to have (TABLEHALL_LOG_WRITER)."""
    backend, writer = request.param
    monkeypatch.setenv("TABLEHALL_LOG_WRITER", writer)
    with database(backend, tmp_path) as url:
        yield url, ProcessCommitter if writer == "process" else GroupCommitter


def test_every_write_of_a_storage_is_timed_once_and_its_phases_add_up_to_no_more_than_its_caller_waited(
    storage: tuple[str, type],
) -> None:
    """Thirty appends, ten at a time (so that some gather behind a batch being written), after a claim and a
    create: 32 writes counted, each phase at least 0, the writing more than 0, and the four phases' sum no more
    than what the callers saw of their writes."""

    async def body() -> tuple[int, float, type]:
        store = await SqlStorage.open(url)
        kind = type(store._writer)
        seen = 0.0

        async def timed(write: Coroutine[object, object, object]) -> None:
            """Its clock starts before the write is first run, so before its op is submitted."""
            nonlocal seen
            started = time.monotonic()
            await write
            seen += time.monotonic() - started

        try:
            started = time.monotonic()
            epoch = (await store.claim("w", [0]))[0]
            entry = MatchEntry("m", "spectacular-bid", ("a", "b"), {}, (bytes(32), bytes(32)), 0, 0)
            await store.create(entry, epoch)
            seen += time.monotonic() - started  # the claim and the create, one after the other
            for first in range(1, 31, 10):
                appends = []
                for seq in range(first, first + 10):
                    step = [LogEntry(seq, seq, "command", seq % 2, {"n": seq}, seq)]
                    appends.append(timed(store.append_all("m", 0, epoch, step, Progress())))
                await asyncio.gather(*appends)
        finally:
            await store.close()
        return 32, seen, kind

    url, chosen = storage
    writes, phases = _counted()
    expected, seen, kind = asyncio.run(asyncio.wait_for(body(), BOUND_S))
    assert kind is chosen
    after_writes, after = _counted()
    spent = [b - a for a, b in zip(phases, after, strict=True)]
    assert after_writes - writes == expected
    assert all(s >= 0 for s in spent) and spent[LOG_PHASES.index("writing")] > 0, spent
    assert sum(spent) <= seen, (spent, seen)


def test_the_bench_reads_the_waits_back_from_an_exposition_and_says_them() -> None:
    before = Waits.parsed(generate_latest(REGISTRY).decode())
    waited([_op(1.0, 3.0), _op(2.0, 3.0)], began=3.5, ended=4.5, answered=7.0)
    grown = Waits.parsed(generate_latest(REGISTRY).decode()).since(before)
    assert grown.writes == 2 and grown.phases == pytest.approx((3.0, 1.0, 2.0, 5.0))
    assert Waits().words() is None, "nothing durable was written: no line"
    said = Waits(2, (3.0, 1.0, 2.0, 5.0), appends=2, appends_s=12.0).words()
    assert said is not None
    assert "(2 writes): 1500.00 ms queued behind the batch before it, 500.00 ms on its way to the writer" in said
    assert "1000.00 ms its batch written and committed, 2500.00 ms the answer waiting for the serving loop" in said
    assert said.endswith("a change's append waited 6000.00 ms in its match's actor, of which 500.00 ms its turn "
                         "after the answer")  # fmt: skip
    assert Waits(1, (0.0,) * 4).plus(Waits(2, (1.0,) * 4)) == Waits(3, (1.0,) * 4)

