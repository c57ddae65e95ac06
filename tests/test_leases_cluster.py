"""Workers on leases under bot load, as real processes over PostgreSQL: a rolling restart of every worker,
scaling 3 → 5 → 2, a worker killed with -9, a worker cut off from the database, and a gateway killed
with -9 in the middle of many commands. Nothing acknowledged is ever lost; a graceful change voids
nothing and players see no error; a crash voids only what could not be taken over in time."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tablehall.client import Client
from tablehall.fleet import owners_of, unix_ms
from tests.durability import Db, run
from tests.leased import Cut, Load, check_played, fleet, records_of
from tests.storage_backends import postgres_database
from workers.sql.migrate import migrate


@pytest.fixture
def pg_url() -> Iterator[str]:
    with postgres_database() as url:
        migrate(url)
        yield url


def test_a_rolling_restart_under_load_voids_nothing_and_loses_nothing(pg_url: str, tmp_path: Path) -> None:
    async def body() -> None:
        async with fleet(pg_url, tmp_path, 3) as f, Load(f.address) as load:
            await load.until_acks(60)
            await f.roll()
            await load.finish()
            statuses = check_played(pg_url, load.played, await records_of(f.address, load.played))
            assert set(statuses) == {"finished:"}, statuses  # no void, nothing left running
            assert load.dropped.count == 0, load.dropped.lines  # the players saw pauses, never an error
            handed = sum(r.log().count("drained:") for r in f.roles)
            assert handed == 3, f.logs()

    run(body, timeout=400)


def test_scaling_three_to_five_to_two_under_load(pg_url: str, tmp_path: Path) -> None:
    async def body() -> None:
        async with fleet(pg_url, tmp_path, 3) as f, Load(f.address) as load:
            await load.until_acks(40)
            for _ in range(2):
                await f.spawn_worker().started()
            table = await f.settled()
            assert len(owners_of(table)) == 5 and max(owners_of(table).values()) <= 52
            for proc in list(f.workers)[:3]:
                assert await f.stop_worker(proc) == 0, proc.log()
            table = await f.settled()
            assert sorted(owners_of(table).values()) == [128, 128]
            await load.finish()
            statuses = check_played(pg_url, load.played, await records_of(f.address, load.played))
            assert set(statuses) == {"finished:"}, statuses
            assert load.dropped.count == 0, load.dropped.lines

    run(body, timeout=400)


def test_kill_9_of_one_worker_of_three_loses_nothing_and_voids_only_what_was_not_taken_over(
    pg_url: str, tmp_path: Path
) -> None:
    async def body() -> None:
        async with fleet(pg_url, tmp_path, 3) as f, Load(f.address, inflight=18) as load:
            await load.until_acks(60)
            victim = f.workers[0]
            await f.kill9(victim)
            killed = unix_ms()
            await f.settled()
            await load.finish()
            statuses = check_played(pg_url, load.played, await records_of(f.address, load.played))
            assert set(statuses) <= {"finished:", "voided:worker_down"}, statuses
            takeovers = [line for r in f.workers for line in r.log().splitlines() if "took over" in line]
            assert takeovers, f.logs()  # the survivors took its partitions over
            assert unix_ms() > killed

    run(body, timeout=400)


def test_a_worker_cut_off_from_the_database_stops_before_another_takes_over(pg_url: str, tmp_path: Path) -> None:
    """A real cut: the worker reaches PostgreSQL only through a proxy that stops forwarding. It stops
    serving when its lease runs out; another worker takes its partitions over; nothing it still had in
    flight is written after that (every write carries its epoch: none of the old epoch after the take)."""

    async def body() -> None:
        proxy = await Cut(("127.0.0.1", 5432)).start()
        cut_url = pg_url.replace("127.0.0.1:5432", f"127.0.0.1:{proxy.port}")
        try:
            async with fleet(pg_url, tmp_path, 2) as f, Load(f.address) as load:
                victim = await f.spawn_worker(database_url=cut_url).started()
                await f.settled()
                await load.until_acks(60)
                before = await f.table()
                pid = str(victim.pid)
                theirs = {p: lease.epoch for p, lease in before.partitions.items() if pid in lease.owner}
                assert theirs
                proxy.cut()
                cut_at = unix_ms()
                give_up = cut_at + 60_000
                while any(pid in lease.owner for lease in (await f.table()).partitions.values()):
                    assert unix_ms() < give_up, f"nobody took the cut worker's partitions over:\n{f.logs()}"
                    await asyncio.sleep(0.05)
                await f.settled()
                # it stopped answering when its lease ran out by its own clock; once it could not renew within
                # a further lease it lets its partitions go for good, and says so
                while "no heartbeat got through for a lease; stops serving" not in victim.log():
                    assert unix_ms() < give_up, victim.log()
                    await asyncio.sleep(0.05)
                await load.finish()
                proxy.heal()  # whatever it still had in flight reaches the database now: fenced
                await asyncio.sleep(0)
                statuses = check_played(pg_url, load.played, await records_of(f.address, load.played))
                assert set(statuses) <= {"finished:", "voided:worker_down"}, statuses
                db = Db(pg_url)
                try:
                    late = db.writes_after(theirs, cut_at)
                finally:
                    db.close()
                assert late == [], f"writes of the old epochs after the cut: {late}"
        finally:
            await proxy.close()

    run(body, timeout=400)


def test_a_gateway_killed_mid_commands_freezes_no_match(pg_url: str, tmp_path: Path) -> None:
    """Many commands in flight when the gateway dies: afterwards every match takes its next command (none
    frozen), and each log holds exactly what its watchers saw."""

    async def body() -> None:
        async with fleet(pg_url, tmp_path, 2) as f:
            async with Load(f.address, inflight=20, think_s=0.0) as load:
                await load.until_acks(200)
                assert f.gateway is not None
                await f.gateway.kill9()
            await f.spawn_gateway().started()
            async with Client(f.address) as client:
                frozen = []
                for played in load.played:
                    seats = [client.seat(played.created.match_id, t) for t in played.created.tokens]
                    views = [await seat.view() for seat in seats]
                    seq, view = views[0]
                    if view["status"] != "in_progress":
                        continue
                    mover = next((s for s, (_, v) in zip(seats, views, strict=True) if _moves(v)), None)
                    if mover is None:
                        continue
                    try:
                        after, _ = await mover.act(_moves((await mover.view())[1])[0])
                    except Exception as error:  # what a frozen match answers
                        frozen.append((played.created.match_id, repr(error)))
                        continue
                    assert after > seq
                    seen = []
                    async for update in client.spectator(played.created.match_id).updates(after_seq=0):
                        seen.append(update.seq)
                        if update.seq >= after:
                            break
                    assert seen == list(range(1, after + 1))  # every change, once, in order
                assert frozen == []
            check_played(pg_url, load.played, {})

    run(body, timeout=400)


def _moves(view: dict[str, Any]) -> list[dict[str, Any]]:
    return [a for a in view.get("legal", []) if a["do"] != "resign"]


def test_sweeps_find_a_matchs_worker_by_its_lease(pg_url: str, tmp_path: Path) -> None:
    """The timeout sweep reaches a match's worker through the lease table: a live one is asked to settle the
    overdue deadline (and answers); once that worker is killed and nobody holds its partition, the sweep
    voids the match `owner_unreachable`. Time is injected into the sweep (`now`), not waited for."""
    from ratings.owners import over_leases
    from ratings.sweep import sweep_once
    from workers.sql.migrate import engine_for

    async def body() -> None:
        async with fleet(pg_url, tmp_path, 1) as f:
            async with Client(f.address) as client:
                created = [await client.create_match("spectacular-bid", ["Ana", "Bia"], {"bank_s": 10, "delay_s": 0})
                           for _ in range(2)]  # fmt: skip
                for m in created:
                    for token in m.tokens:
                        await client.seat(m.match_id, token).act({"do": "ready"})  # its clock runs
            engine = engine_for(pg_url)
            later = unix_ms() + 60_000  # past every bank and the grace
            async with over_leases(pg_url) as settle:
                report = await sweep_once(engine, settle, now=later)
            assert (report.found, report.settled, report.voided) == (2, 2, {}), report
            db = Db(pg_url)
            try:
                # the live owner was asked and answered: its own timer decides, by its own clock (the deadline
                # has not come for it yet): nothing is voided by the sweep
                assert {db.match_row(m.match_id).status for m in created} == {"in_progress"}
            finally:
                db.close()
            async with Client(f.address) as client:
                third = await client.create_match("spectacular-bid", ["Cy", "Di"], {"bank_s": 10, "delay_s": 0})
                for token in third.tokens:
                    await client.seat(third.match_id, token).act({"do": "ready"})
            await f.kill9(f.workers[0])
            give_up = unix_ms() + 30_000
            while (await f.table()).holder(0, unix_ms(), f.lease_ms) is not None:
                assert unix_ms() < give_up
                await asyncio.sleep(0.05)
            async with over_leases(pg_url) as settle:
                report = await sweep_once(engine, settle, now=unix_ms() + 60_000)
            assert report.voided == {"owner_unreachable": 3}, report  # its three matches, nobody to ask
            engine.dispose()

    run(body, timeout=120)


def _pause(pid: int) -> None:
    os.kill(pid, signal.SIGSTOP)


def _resume(pid: int) -> None:
    os.kill(pid, signal.SIGCONT)


def test_a_stalled_worker_with_nobody_to_take_over_answers_again_and_loses_nothing(
    pg_url: str, tmp_path: Path
) -> None:
    """A worker stopped (SIGSTOP) a little longer than its lease, with no peer to take its partitions: when it
    runs again its leases ran out by its own clock, but the table shows nobody took them: it answers again
    with nothing reloaded and nothing voided (the pause was thinking time)."""

    async def body() -> None:
        async with fleet(pg_url, tmp_path, 1) as f, Load(f.address, inflight=6) as load:
            await load.until_acks(40)
            victim = f.workers[0]
            _pause(victim.pid)
            await asyncio.sleep(0.7)  # the stall itself: real time passing while the process is stopped
            _resume(victim.pid)
            await load.until_acks(load.acks + 40)
            await load.finish()
            statuses = check_played(pg_url, load.played, await records_of(f.address, load.played))
            assert set(statuses) == {"finished:"}, statuses
            log = victim.log()
            assert "a heartbeat was late, but nobody took its partitions" in log, log[-3000:]
            assert "stops serving its" not in log

    run(body, timeout=300)


def test_a_stalled_worker_is_fenced_when_it_runs_again(pg_url: str, tmp_path: Path) -> None:
    """A worker stopped (SIGSTOP) for seconds while a peer takes its partitions over: when it runs again its
    timers and commands under way try to write with the old epochs and are refused; no write of the old
    epochs lands after the stop; nothing acknowledged is lost."""

    async def body() -> None:
        async with fleet(pg_url, tmp_path, 2) as f, Load(f.address) as load:
            await load.until_acks(60)
            victim = f.workers[0]
            pid = str(victim.pid)
            theirs = {p: lease.epoch for p, lease in (await f.table()).partitions.items() if pid in lease.owner}
            _pause(victim.pid)
            stopped = unix_ms()
            give_up = stopped + 60_000
            while any(pid in lease.owner for lease in (await f.table()).partitions.values()):
                assert unix_ms() < give_up, "nobody took the stalled worker's partitions over"
                await asyncio.sleep(0.05)
            _resume(victim.pid)
            await load.finish()
            statuses = check_played(pg_url, load.played, await records_of(f.address, load.played))
            assert set(statuses) <= {"finished:", "voided:worker_down"}, statuses
            db = Db(pg_url)
            try:
                assert db.writes_after(theirs, stopped) == []
            finally:
                db.close()

    run(body, timeout=300)
