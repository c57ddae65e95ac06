"""kill -9 of a worker process in the middle of bot matches: nothing acknowledged is lost, the bots'
streams resume on the restarted worker, the matches finish and their records replay to their outcome.

Real processes: 3 workers and a gateway over one database (SQLite file, PostgreSQL)."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablehall.bots import run_bot
from tablehall.client import Client
from tests.durability import DB_BACKENDS, Db, cluster, normal, pg_or_sqlite, run
from workers.games.records import replay
from workers.partitions import owner_of

WORKERS = 3
MATCHES = 6
THINK_S = 0.02
START_POINTS = 25
"""Short matches (a few dozen commands each), long enough to be cut in the middle."""
ACKS_BEFORE_KILL = 6
"""Each match on the doomed worker has this many acknowledged commands before the kill (or is over)."""


@pytest.fixture(params=DB_BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from pg_or_sqlite(request, tmp_path)


def over(view: dict[str, Any] | None) -> bool:
    return view is not None and view["status"] != "in_progress"


def assert_outcome_is_replayed(record: dict[str, Any], final: dict[str, Any]) -> None:
    replayed = replay(record)
    assert replayed.error is None, replayed.to_json()
    outcome = replayed.outcome
    assert outcome["status"] == final["status"]
    assert outcome["winner"] == final["winner"]
    assert outcome["reason"] == final["reason"]
    assert outcome["points"] == final["points"]
    assert [round(s * 1000) for s in outcome["bank_s"]] == final["banks_ms"]
    assert outcome.get("void_reason") == final["void_reason"]


def test_kill_9_mid_match_loses_no_acknowledged_command(db_url: str, tmp_path: Path) -> None:
    async def body() -> None:
        with cluster(db_url, WORKERS, tmp_path, tolerance_s=30) as c:
            await c.start()
            async with Client(c.address) as client:
                created = [
                    await client.create_match("spectacular-bid", ["Ana", "Bia"], {"start_points": START_POINTS})
                    for _ in range(MATCHES)
                ]
                owners = {m.match_id: owner_of(m.match_id, WORKERS) for m in created}
                victim = collections.Counter(owners.values()).most_common(1)[0][0]
                doomed = {m for m, k in owners.items() if k == victim}

                killed = False
                acked: dict[str, list[tuple[int, int, dict[str, Any], bool]]] = collections.defaultdict(list)
                """Per match: (seq, seat, action, acknowledged after the kill?)."""
                latest: dict[str, dict[str, Any]] = {}
                ready = asyncio.Event()

                def reporter(match_id: str) -> Any:
                    def report(seq: int, action: dict[str, Any], after: dict[str, Any]) -> None:
                        acked[match_id].append((seq, after["seat"], action, killed))
                        latest[match_id] = after
                        if all(len(acked[m]) >= ACKS_BEFORE_KILL or over(latest.get(m)) for m in doomed):
                            ready.set()

                    return report

                bots = [
                    asyncio.create_task(
                        run_bot(
                            c.address,
                            m.match_id,
                            token,
                            greedy=False,
                            seed=7 * i + seat,
                            think_s=THINK_S,
                            report=reporter(m.match_id),
                            max_reconnects=40,
                        )
                    )
                    for i, m in enumerate(created)
                    for seat, token in enumerate(m.tokens)
                ]
                await asyncio.wait_for(ready.wait(), 30)
                await c.worker_procs[victim].kill9()
                killed = True
                unfinished_at_kill = {m for m in doomed if not over(latest.get(m))}
                assert unfinished_at_kill, "every match of the killed worker was over already: nothing tested"
                await c.restart_worker(victim)

                finals = await asyncio.wait_for(asyncio.gather(*bots), 60)

                db = Db(db_url)
                try:
                    for i, m in enumerate(created):
                        final = finals[2 * i]
                        assert final["status"] == "finished", (m.match_id, final["status"], final["void_reason"])
                        record = await client.record(m.match_id)
                        assert_outcome_is_replayed(record, final)

                        log = db.log(m.match_id)
                        commands = [e for e in log if e.kind == "command"]
                        by_change = {e.change: e for e in commands}
                        for seq, seat, action, _ in acked[m.match_id]:
                            entry = by_change.get(seq)
                            assert entry is not None, f"{m.match_id}: acknowledged seq {seq} {action} is not in the log"
                            assert entry.seat == seat
                            assert normal("spectacular-bid", entry.action) == normal("spectacular-bid", action)
                        # the record is the log's commands, in order
                        events = record["events"]
                        assert [e["seat"] for e in events] == [e.seat for e in commands]
                        assert [normal("spectacular-bid", e) for e in events] == [
                            normal("spectacular-bid", e.action) for e in commands
                        ]
                        assert [round(e["t"] * 1000) for e in events] == [e.t_ms for e in commands]
                        assert [e.seq for e in log] == list(range(1, len(log) + 1))
                    # the restarted worker really carried on matches that were running at the kill
                    resumed = [m for m in unfinished_at_kill if any(after for *_, after in acked[m])]
                    assert resumed, "no match of the killed worker took a command after the restart"
                finally:
                    db.close()

    run(body, timeout=100)
