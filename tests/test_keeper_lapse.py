"""A heartbeat sent after this worker's leases had run out by its own clock (the process was stopped, or
starved, longer than a lease) does not make it answer again by itself: a peer may have taken a partition
meanwhile, so the worker answers again only once its loop has read the table and found nobody took any
(workers/keeper.py). The process-level tests stop a real worker with SIGSTOP (tests/test_leases_cluster.py);
which of its heartbeat thread and its loop ran first after SIGCONT was up to the scheduler, and here it is
not: the lapse and the heartbeat come one after the other on the loop."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from tests.test_ratings_db import run
from workers.errors import NotOwner
from workers.host import MatchHost
from workers.keeper import LeaseKeeper, LeaseSettings
from workers.storage import MemoryStorage

LEASE_MS = 2000


def test_a_heartbeat_after_the_leases_ran_out_waits_for_the_table(caplog: pytest.LogCaptureFixture) -> None:
    async def body() -> None:
        host = MatchHost(MemoryStorage(), owner="w1")
        keeper = LeaseKeeper(host, "127.0.0.1:9", LeaseSettings(LEASE_MS))
        await keeper.start()
        try:
            while not host.held:  # the plan gives the only member every partition
                await asyncio.sleep(0.01)
            held = dict(host.held)
            host.valid_until = time.monotonic() - 0.001  # the leases ran out, as after a long stop
            keeper._renew()  # the heartbeat thread's next beat gets through
            assert host.valid_until < time.monotonic(), "extended before anyone looked at the table"
            with pytest.raises(NotOwner):
                await host.owned("0123456789abcdef")
            while host.valid_until < time.monotonic():  # the loop's rescue reads the table
                await asyncio.sleep(0.01)
            assert host.held == held, "nobody took a partition: it serves them all again, at the same epochs"
            assert "a heartbeat was late, but nobody took its partitions" in caplog.text
        finally:
            await keeper.stop()
            host.close()

    with caplog.at_level(logging.WARNING, logger="tablehall"):
        run(body())
