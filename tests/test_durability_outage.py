"""SB-11 across a worker outage (real processes, kill -9): a running clock whose owner was down longer
than the tolerance voids its match with `worker_down`; a shorter outage is ordinary thinking time, charged
to the bank of the seat whose decision it was; a 501♠ match without a clock simply continues."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

from tablehall.bots import run_bot
from tablehall.client import Client, SeatClient, TablehallError
from tests.durability import DB_BACKENDS, Cluster, Db, cluster, normal, pg_or_sqlite, run, unix_ms
from workers.games.records import replay

T = TypeVar("T")
SB_CLOCK = {"bank_s": 120, "delay_s": 0, "start_points": 50}
"""No delay: every millisecond of a decision comes out of the bank."""


@pytest.fixture(params=DB_BACKENDS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    yield from pg_or_sqlite(request, tmp_path)


async def reachable(call: Callable[[], Awaitable[T]], within_s: float = 20.0) -> T:
    """`call()`, again while the restarted worker is not reachable yet (UNAVAILABLE); bounded."""
    give_up = time.monotonic() + within_s
    while True:
        try:
            return await call()
        except TablehallError as error:
            if error.status is not grpc.StatusCode.UNAVAILABLE or time.monotonic() > give_up:
                raise
        await asyncio.sleep(0.05)


async def clock_running(client: Client) -> tuple[str, list[SeatClient], int, dict[str, Any]]:
    """A Spectacular Bid match past both readies: the first decision's clock runs for `turn`."""
    created = await client.create_match("spectacular-bid", ["Ana", "Bia"], SB_CLOCK)
    seats = [client.seat(created.match_id, t) for t in created.tokens]
    for seat in seats:
        await seat.act({"do": "ready"})
    _, view = await seats[0].view()
    assert view["phase"] in ("auction", "lead", "play") and view["clock_running"] == view["turn"] is not None, view
    return created.match_id, seats, view["turn"], view


async def outage(c: Cluster, at_least_s: float = 0.0) -> tuple[int, int]:
    """kill -9 worker 0 and start it again, down for at least `at_least_s`; (killed, serving) unix ms."""
    await c.worker_procs[0].kill9()
    killed = unix_ms()
    rest = killed / 1000 + at_least_s - time.time()
    if rest > 0:
        await asyncio.sleep(rest)  # the outage itself: real time passing while no worker runs
    await c.restart_worker(0)
    return killed, unix_ms()


def test_short_outage_charges_the_thinking_time_and_the_match_goes_on(db_url: str, tmp_path: Path) -> None:
    async def body() -> None:
        with cluster(db_url, 1, tmp_path, tolerance_s=20) as c:
            await c.start()
            async with Client(c.address) as client:
                match_id, seats, turn, before = await clock_running(client)
                killed, serving = await outage(c)
                db = Db(db_url)
                try:
                    created = db.match_row(match_id).created_unix_ms
                finally:
                    db.close()

                _, view = await reachable(seats[turn].view)
                assert view["status"] == "in_progress" and view["void_reason"] is None
                assert view["banks_ms"] == before["banks_ms"]  # nothing charged yet: the decision still runs
                action = next(a for a in view["legal"] if a["do"] not in ("resign", "abandon"))

                async def act() -> tuple[int, int, dict[str, Any]]:
                    sent = unix_ms()
                    _, after = await seats[turn].act(action)
                    return sent, unix_ms(), after

                sent, answered, after = await reachable(act)

                since = created + before["decision_since_ms"]
                bank = before["banks_ms"][turn]
                charged = bank - after["banks_ms"][turn]
                assert sent - since <= charged <= answered - since, (sent - since, charged, answered - since)
                assert charged >= serving - killed  # the outage itself was thinking time
                other = 1 - turn
                assert after["banks_ms"][other] == before["banks_ms"][other]
                assert after["status"] == "in_progress"

                record_t = None
                db = Db(db_url)
                try:
                    log = db.log(match_id)
                finally:
                    db.close()
                assert [e.kind for e in log if e.kind in ("void", "deadline")] == []
                last = [e for e in log if e.kind == "command"][-1]
                assert (last.seat, normal("spectacular-bid", last.action)) == (turn, normal("spectacular-bid", action))
                record_t = created + last.t_ms
                assert sent <= record_t <= answered

    run(body, timeout=60)


def test_long_outage_voids_running_clocks_and_clockless_501_goes_on(db_url: str, tmp_path: Path) -> None:
    tolerance_s = 0.5

    async def body() -> None:
        with cluster(db_url, 1, tmp_path, tolerance_s=tolerance_s) as c:
            await c.start()
            async with Client(c.address) as client:
                sb_id, sb_seats, turn, _ = await clock_running(client)
                _, own = await sb_seats[turn].view()
                move = next(a for a in own["legal"] if a["do"] not in ("resign", "abandon"))

                five = await client.create_match("501", ["Ann", "Bob", "Cy"], {"start_score": 120})
                acked: list[tuple[int, int, dict[str, Any], bool]] = []
                killed_flag = False
                going = asyncio.Event()

                def report(seq: int, action: dict[str, Any], after: dict[str, Any]) -> None:
                    acked.append((seq, after["seat"], action, killed_flag))
                    if len(acked) >= 5:
                        going.set()

                bots = [
                    asyncio.create_task(
                        run_bot(
                            c.address,
                            five.match_id,
                            token,
                            greedy=True,
                            seed=seat,
                            think_s=0.02,
                            report=report,
                            max_reconnects=40,
                        )
                    )
                    for seat, token in enumerate(five.tokens)
                ]
                await asyncio.wait_for(going.wait(), 20)
                killed, serving = await outage(c, at_least_s=tolerance_s + 0.5)
                killed_flag = True
                assert serving - killed > tolerance_s * 1000

                # Spectacular Bid: its clock ran through the outage → voided, worker_down, everywhere
                seq, view = await reachable(sb_seats[0].view)
                assert (view["status"], view["void_reason"]) == ("voided", "worker_down"), view
                assert view["legal"] == []
                with pytest.raises(TablehallError) as refused:
                    await sb_seats[turn].act(move)
                assert refused.value.status is grpc.StatusCode.FAILED_PRECONDITION
                record = await client.record(sb_id)
                assert record["void"]["reason"] == "worker_down"
                outcome = replay(record)
                assert outcome.error is None
                assert (outcome.outcome["status"], outcome.outcome["void_reason"]) == ("voided", "worker_down")
                assert outcome.outcome["winner"] is None
                db = Db(db_url)
                try:
                    row = db.match_row(sb_id)
                    assert (row.status, row.void_reason) == ("voided", "worker_down")
                    assert record["void"]["t"] * 1000 >= killed - row.created_unix_ms
                finally:
                    db.close()
                assert f"match {sb_id} voided: worker_down" in c.worker_procs[0].log()

                # 501♠ without a clock: no void, the bots reconnect and finish
                finals = await asyncio.wait_for(asyncio.gather(*bots), 40)
                assert all(f["phase"] == "over" for f in finals), [f["phase"] for f in finals]
                assert any(after for *_, after in acked), "the 501 match took no command after the restart"
                record = await client.record(five.match_id)
                assert "void" not in record
                replayed = replay(record)
                assert replayed.error is None
                assert replayed.outcome["status"] == "finished"
                assert replayed.outcome["scores"] == finals[0]["scores"]
                assert replayed.outcome["winners"] == finals[0]["winners"]
                db = Db(db_url)
                try:
                    log = db.log(five.match_id)
                finally:
                    db.close()
                assert "void" not in {e.kind for e in log}
                commands = {e.change: e for e in log if e.kind == "command"}
                for seq, seat, action, _ in acked:
                    assert seq in commands and commands[seq].seat == seat
                    assert normal("501", commands[seq].action) == normal("501", action)

    run(body, timeout=60)
