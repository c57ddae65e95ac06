"""The event loop's thread first. A serving process's loop runs every match's clock and every command's turn;
its other threads (gRPC's poller, the read threads, a log writer thread) and its log
writer process run at a lower CPU priority, nice `beside_nice()`, so that on a machine short of cores the
scheduler lets the loop run first and they take what it leaves. They wait for a core more often and
preempt the loop less (README, Speed: on SQLite the loop was preempted about half as often, and the service
ran 2-10 % faster in three alternating pairs). They also run as SCHED_BATCH: a batch thread that wakes never
preempts the thread on its core, it waits for the core's next tick or a free core (on SQLite the loop was
preempted half as often again).

The worker processes `tablehall serve --workers N` starts on its own machine run as SCHED_BATCH as a whole
(`BATCH_ENV`, `batch_process`): every command passes the gateway's loop twice, and a worker that woke for each
reply preempted it, so each woke for fewer commands at a time (README, Speed: +6 % commands a second on
PostgreSQL with three workers). A worker's timers still fire on a free core at once; on a busy one they wait
for its tick, milliseconds, far inside the match's tolerance. A worker started on its own keeps the default.

Linux gives each thread its own nice value and a new thread its creator's, so the loop's thread (and a
worker's heartbeat) stays at the process's priority while the others are lowered: at the loop's start
(`threads_aside`), each read thread as it starts (`read_threads`), and at `SWEEPS_S` the threads a library
started since (`keep_aside`). A thread's priority is only ever lowered (its nice value raised): raising it
back would need a privilege the service does not ask for. Elsewhere than Linux nothing changes.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import sys
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor

log = logging.getLogger(__name__)

ENV = "TABLEHALL_NICE_BESIDE_LOOP"
DEFAULT_NICE = 5
"""Low enough that the loop's wake-ups win a core over them, high enough that the log writer, gRPC's poller
and the read threads, which the loop's commands wait for, still get one soon (5 and 10 measured alike)."""
MAX_NICE = 19
BATCH_ENV = "TABLEHALL_SCHED_BATCH"
"""1: this whole process runs as SCHED_BATCH (`batch_process`); what `tablehall serve --workers N` sets for the
workers it starts, unless the setting is given (0: they run as any process)."""
HEARTBEAT_THREAD = "tablehall-heartbeat"
"""A worker's lease heartbeat thread (`keeper`) keeps the loop's priority: a heartbeat late by its lease
loses the worker its partitions, and it needs a core for moments only."""
SWEEPS_S = (0.0, 1.0, 5.0)
"""When every other thread is lowered: at the loop's start, a second after (gRPC's threads start with the
server), then every 5 s (threads that libraries start later: a pool's feeder, gRPC's)."""


def beside_nice(env: Mapping[str, str] = os.environ) -> int:
    """The nice value of everything beside the loop: TABLEHALL_NICE_BESIDE_LOOP (0-19; 0 turns this off)."""
    text = env.get(ENV, "").strip()
    if not text:
        return DEFAULT_NICE
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_NICE:
        log.warning("%s=%.20r is not a whole number from 0 to %d: using %d", ENV, text, MAX_NICE, DEFAULT_NICE)
        return DEFAULT_NICE
    return value


def step_aside(thread_id: int = 0, nice: int | None = None) -> bool:
    """Lower the priority of thread `thread_id` of this process (0: the calling thread) to `nice` (default
    `beside_nice()`), never raising it, and run it as SCHED_BATCH; True if either changed. A thread that ended
    meanwhile is passed over."""
    nice = beside_nice() if nice is None else nice
    if nice <= 0 or not sys.platform.startswith("linux"):
        return False
    changed = batched(thread_id)
    try:
        if os.getpriority(os.PRIO_PROCESS, thread_id) >= nice:
            return changed
        os.setpriority(os.PRIO_PROCESS, thread_id, nice)
    except OSError:
        return changed
    return True


def batched(thread_id: int = 0) -> bool:
    """Thread `thread_id` (0: the calling one) from SCHED_OTHER to SCHED_BATCH: its wake-ups no longer preempt
    the thread running on the core. Any thread may make that change to itself or a thread of its process; a
    thread under another policy is left alone. True if it changed."""
    try:
        if os.sched_getscheduler(thread_id) != os.SCHED_OTHER:
            return False
        os.sched_setscheduler(thread_id, os.SCHED_BATCH, os.sched_param(0))
    except (OSError, AttributeError):  # ended meanwhile; or no such call here (not Linux)
        return False
    return True


def batch_process(env: Mapping[str, str] = os.environ) -> int:
    """With `BATCH_ENV` at 1, every thread of this process SCHED_BATCH, those it starts later too (a new thread
    takes its creator's policy); called first thing in a worker. How many threads changed."""
    if env.get(BATCH_ENV, "").strip() != "1" or not sys.platform.startswith("linux"):
        return 0
    try:
        threads = [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        threads = [0]
    return sum(batched(thread) for thread in threads)


def threads_aside(loop_thread: int, nice: int | None = None) -> int:
    """Every thread of this process but `loop_thread` (a native thread id) and the heartbeat stepped aside;
    how many changed."""
    nice = beside_nice() if nice is None else nice
    try:
        threads = [int(name) for name in os.listdir("/proc/self/task")]
    except OSError:
        return 0
    first = {loop_thread} | {t.native_id for t in threading.enumerate() if t.name == HEARTBEAT_THREAD}
    return sum(step_aside(thread, nice) for thread in threads if thread not in first)


def read_threads(nice: int) -> ThreadPoolExecutor:
    """The loop's default executor (`asyncio.to_thread`): each of its threads steps aside to `nice` as it
    starts."""
    return ThreadPoolExecutor(thread_name_prefix="tablehall-read", initializer=step_aside, initargs=(0, nice))


async def keep_aside(nice: int, sweeps_s: tuple[float, ...] = SWEEPS_S) -> None:
    """On the loop's thread, until cancelled: every other thread of the process stepped aside to `nice` after
    each wait of `sweeps_s`, the last one repeated."""
    loop_thread = threading.get_native_id()
    if nice <= 0:
        return
    for wait_s in itertools.chain(sweeps_s, itertools.repeat(sweeps_s[-1])):
        await asyncio.sleep(wait_s)
        threads_aside(loop_thread, nice)  # a listing of /proc/self/task: well under a millisecond
