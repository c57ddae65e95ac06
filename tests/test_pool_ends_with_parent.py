"""A heavy-work pool's process (workers/offload.py) ends with the process that made it, even one killed -9
(which shuts no pool down): no orphan is left holding memory and database connections. Seen before: after
`kill -9` of `tablehall serve`, its rating pool's process and multiprocessing's resource tracker lived on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from tests.durability import REPO
from tests.processes import stop_process
from tests.writer_processes import descendants, ended, outlived_by_none

PARENT = """
import asyncio, os, sys
from concurrent.futures import ProcessPoolExecutor
import multiprocessing
from workers import offload

async def main(pidfd):
    if pidfd:
        pid = await offload.run("test", os.getpid)
    else:  # the kernel's parent-death signal, as on a kernel without pidfds
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=offload.pool_process, initargs=(os.getpid(), False))
        pid = await asyncio.get_running_loop().run_in_executor(pool, os.getpid)
    print(pid, flush=True)
    sys.stdin.read()

if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] == "pidfd"))
"""


@pytest.mark.parametrize("watch", ["pidfd", "parent-death-signal"])
def test_a_pool_process_ends_when_its_parent_is_killed(watch: str) -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, watch], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert parent.stdout is not None
        pool_pid = int(parent.stdout.readline())
        below = descendants(parent.pid)
        assert pool_pid in below and not ended(pool_pid), below
        assert os.getpriority(os.PRIO_PROCESS, pool_pid) > os.getpriority(os.PRIO_PROCESS, parent.pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        outlived_by_none(below)  # the pool's process, and multiprocessing's resource tracker with it
    finally:
        stop_process(parent)
