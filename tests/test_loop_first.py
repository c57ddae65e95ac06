"""The event loop's thread first (workers/loop_first.py): in a real `tablehall serve` on a database file, every
thread but the loop's and the log writer process run at nice 5 and as SCHED_BATCH, the loop's thread at the
process's own priority and policy; a worker's heartbeat thread keeps the loop's priority; the workers `serve
--workers N` starts run as SCHED_BATCH as a whole unless told otherwise; a thread is only ever lowered; the
setting's bad values fall back to the default, and 0 turns it off."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablehall.processes import children
from tests.durability import REPO
from tests.metrics_support import until
from tests.processes import stop_process
from tests.writer_processes import BOUND_S, descendants
from workers import loop_first
from workers.sql.writer_fork import WRITER_NAME

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


def _nice(pid: int, thread: int | None = None) -> int:
    """A thread's (or a process's main thread's) nice value as /proc shows it (field 19 of stat)."""
    path = Path(f"/proc/{pid}/task/{thread or pid}/stat")
    return int(path.read_text().rsplit(")", 1)[1].split()[16])


def _policy(thread: int) -> int:
    return os.sched_getscheduler(thread)


def _threads(pid: int) -> list[int]:
    return [int(name) for name in os.listdir(f"/proc/{pid}/task")]


@contextlib.contextmanager
def _serving(tmp_path: Path, *flags: str, batch: str | None = None) -> Iterator[int]:
    """A real `tablehall serve` on a database file, as a user starts it (`batch`: its BATCH_ENV): its pid once it
    serves."""
    unset = ("TABLEHALL_LOG_WRITER", loop_first.ENV, loop_first.BATCH_ENV)
    env = {k: v for k, v in os.environ.items() if k not in unset}
    if batch is not None:
        env[loop_first.BATCH_ENV] = batch
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--web-port", "off", *flags]
    url = f"sqlite:///{tmp_path / 'first.db'}"
    with (tmp_path / "said.txt").open("w") as said:
        server = subprocess.Popen(
            [*command, "--database-url", url], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=said, text=True
        )
        try:
            assert server.stdout is not None
            assert "serving on" in server.stdout.readline()
            yield server.pid
        finally:
            stop_process(server)
    assert server.returncode == 0, (tmp_path / "said.txt").read_text()[-2000:]


def test_a_serving_process_runs_every_thread_but_its_loop_and_its_writer_at_a_lower_priority(tmp_path: Path) -> None:
    with _serving(tmp_path) as pid:


        def lowered() -> bool:
            return all(_nice(pid, thread) == loop_first.DEFAULT_NICE for thread in _threads(pid) if thread != pid)

        until(lowered, BOUND_S, "every thread but the loop's at nice 5")
        assert len(_threads(pid)) > 2  # gRPC's poller and the read threads among them
        assert _nice(pid) == 0  # the loop's thread: the process's own priority
        writers = [child for child, comm in descendants(pid).items() if comm == WRITER_NAME]
        assert writers, descendants(pid)
        assert [_nice(writer) for writer in writers] == [loop_first.DEFAULT_NICE] * len(writers)
        assert _policy(pid) == os.SCHED_OTHER  # the loop: wakes and preempts as any thread
        assert {_policy(thread) for thread in _threads(pid) if thread != pid} == {os.SCHED_BATCH}
        assert [_policy(writer) for writer in writers] == [os.SCHED_BATCH] * len(writers)


def test_a_worker_keeps_its_loop_and_its_heartbeat_first(tmp_path: Path) -> None:
    with _serving(tmp_path, "--workers", "1") as pid:
        worker = _worker_of(pid)

        def at_the_loops_priority() -> list[int]:
            return [thread for thread in _threads(worker) if _nice(worker, thread) == 0]

        until(lambda: len(at_the_loops_priority()) == 2, BOUND_S, "every thread but the loop and heartbeat lowered")
        assert worker in at_the_loops_priority()  # its loop, and one more: the heartbeat (the leases' own)
        assert len(_threads(worker)) > 4
        assert {_nice(worker, thread) for thread in _threads(worker)} == {0, loop_first.DEFAULT_NICE}
        assert {_policy(thread) for thread in _threads(worker)} == {os.SCHED_BATCH}  # beside its gateway: all of it
        assert _policy(pid) == os.SCHED_OTHER  # the gateway's loop


def _worker_of(pid: int) -> int:
    def workers() -> list[int]:
        return [child for child in children(pid) if b"worker" in Path(f"/proc/{child}/cmdline").read_bytes()]

    until(workers, BOUND_S, "the worker process")
    (worker,) = workers()
    return worker


def test_a_worker_runs_as_any_process_when_told_so(tmp_path: Path) -> None:
    with _serving(tmp_path, "--workers", "1", batch="0") as pid:
        worker = _worker_of(pid)
        until(lambda: len(_threads(worker)) > 4, BOUND_S, "the worker's threads")
        assert _policy(worker) == os.SCHED_OTHER


def test_a_process_told_so_runs_every_thread_as_batch_those_started_later_too() -> None:
    script = textwrap.dedent(
        """
        import os, sys, threading
        from workers import loop_first
        release = threading.Event()
        before = threading.Thread(target=release.wait)
        before.start()
        changed = loop_first.batch_process({loop_first.BATCH_ENV: sys.argv[1]})
        after = threading.Thread(target=release.wait)
        after.start()
        names = {os.SCHED_OTHER: "other", os.SCHED_BATCH: "batch"}
        print(changed, *(names[os.sched_getscheduler(t)] for t in (0, before.native_id, after.native_id)))
        release.set()
        """
    )
    said = []
    for setting in ("1", "0", ""):
        done = subprocess.run(
            [sys.executable, "-c", script, setting], cwd=REPO, capture_output=True, text=True, timeout=BOUND_S
        )
        assert done.returncode == 0, done.stderr[-2000:]
        said.append(done.stdout.split())
    assert said[0][1:] == ["batch", "batch", "batch"] and int(said[0][0]) >= 2
    assert said[1] == said[2] == ["0", "other", "other", "other"]


def test_every_thread_but_the_loops_and_the_heartbeat_steps_aside_in_a_process_of_its_own() -> None:
    script = textwrap.dedent(
        """
        import os, threading
        from workers import loop_first
        release = threading.Event()
        started = [threading.Thread(target=release.wait) for _ in range(3)]
        heartbeat = threading.Thread(target=release.wait, name=loop_first.HEARTBEAT_THREAD)
        for thread in [*started, heartbeat]:
            thread.start()
        changed = loop_first.threads_aside(threading.get_native_id(), 7)
        again = loop_first.threads_aside(threading.get_native_id(), 7)
        print(changed, again, os.getpriority(os.PRIO_PROCESS, 0), os.getpriority(os.PRIO_PROCESS, heartbeat.native_id),
              *sorted(os.getpriority(os.PRIO_PROCESS, thread.native_id) for thread in started))
        release.set()
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=BOUND_S)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["3", "0", "0", "0", "7", "7", "7"]  # changed, again, loop, heartbeat, others


def test_a_thread_is_lowered_and_never_raised_back() -> None:
    release, ready = threading.Event(), threading.Event()

    def waits() -> None:
        ready.set()
        release.wait()

    thread = threading.Thread(target=waits)
    thread.start()
    try:
        ready.wait()
        tid = thread.native_id
        assert tid is not None
        assert loop_first.step_aside(tid, 6) is True
        assert os.getpriority(os.PRIO_PROCESS, tid) == 6
        assert os.sched_getscheduler(tid) == os.SCHED_BATCH
        assert loop_first.step_aside(tid, 3) is False  # never back up (that would need a privilege)
        assert loop_first.step_aside(tid, 0) is False  # 0: off
        assert os.getpriority(os.PRIO_PROCESS, tid) == 6
    finally:
        release.set()
        thread.join()


@pytest.mark.parametrize(
    ("text", "nice"), [("", 5), ("10", 10), ("0", 0), (" 19 ", 19), ("20", 5), ("-1", 5), ("x" * 10_000, 5)]
)
def test_the_setting(text: str, nice: int, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="workers.loop_first"):
        assert loop_first.beside_nice({loop_first.ENV: text}) == nice
    said = " ".join(record.getMessage() for record in caplog.records)
    assert bool(said) == (nice == 5 and text != "")
    assert len(said) < 200  # a huge value is not echoed
