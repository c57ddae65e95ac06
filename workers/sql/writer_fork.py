"""The fork server of the log's writer processes: forked once by `tablehall serve` at its start, while the
process still has one thread and gRPC has not started, with SQLAlchemy and the database's driver imported.
A writer is then a fork of it (milliseconds), not a new Python process importing SQLAlchemy (~0.5 s of CPU,
~2 s on a loaded machine: a new worker's first claims waited for it; README, Speed).

The fork server reads one request at a time from its socket to the serving process (a writer's socket end,
passed as a file descriptor), forks a writer for it and answers the writer's pid. It ends when that socket
closes: the serving process stopped or was killed. Its writers are reaped by the kernel (SIGCHLD ignored);
the serving process watches each through a pidfd. A process with a fork server runs its log's writer in a
process by default (`writer_process.writer_in_process`); if the fork server is gone, writers start as new
Python processes.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import select
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable

log = logging.getLogger(__name__)

_PID = struct.Struct(">i")
WRITER_NAME = "log-writer"
FORK_SERVER_NAME = "log-writer-fork"
"""Their names in /proc/PID/comm (a fork keeps its parent's command line; `ps -o comm`, the benches)."""
_server: ForkServer | None = None


class Forked:
    """A writer forked by the fork server: not this process's child, so it is waited for through a pidfd
    (where the kernel has none, by asking after its pid)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd = -1
        with contextlib.suppress(OSError):  # ended already (ProcessLookupError), or no pidfds here
            self._fd = os.pidfd_open(pid)

    def wait(self, timeout: float | None = None) -> int | None:
        """Until the writer ended (its exit code is its reaper's: None); TimeoutExpired as `Popen.wait`."""
        if self._fd < 0:
            self._asked(timeout)
            return None
        if not select.select([self._fd], [], [], timeout)[0]:
            raise subprocess.TimeoutExpired(f"writer {self.pid}", timeout or 0.0)
        self._release()
        return None

    def _asked(self, timeout: float | None) -> None:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._alive():
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(f"writer {self.pid}", timeout or 0.0)
            time.sleep(0.01)  # no pidfd: nothing to wait on but the pid

    def _alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except OSError:
            return True
        return True

    def kill(self) -> None:
        with contextlib.suppress(OSError):
            if self._fd >= 0:
                signal.pidfd_send_signal(self._fd, signal.SIGKILL)
            elif self._alive():
                os.kill(self.pid, signal.SIGKILL)

    def _release(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __del__(self) -> None:
        self._release()


class ForkServer:
    """The serving process's side: `fork(fd)` asks for a writer on that socket end and returns it."""

    def __init__(self, pid: int, sock: socket.socket) -> None:
        self.pid = pid
        self._sock = sock
        self._lock = threading.Lock()
        self._gone = False

    def fork(self, fd: int) -> Forked | None:
        """A writer on `fd`; None if the fork server is gone (the caller starts a writer the slow way). It
        blocks for the fork (milliseconds): on the event loop only when a writer died and the next op needs one."""
        with self._lock:
            if self._gone:
                return None
            try:
                socket.send_fds(self._sock, [b"w"], [fd])
                answer = b""
                while len(answer) < _PID.size:
                    chunk = self._sock.recv(_PID.size - len(answer))
                    if not chunk:
                        raise ConnectionError("the fork server closed its socket")
                    answer += chunk
                return Forked(_PID.unpack(answer)[0])
            except OSError as error:
                log.error("the log writers' fork server is gone (%s): writers start as new processes", error)
                self._gone = True
                self._sock.close()
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(self.pid, os.WNOHANG)  # reaped, when it has ended already
                return None


def start(url: str, run_writer: Callable[[int], None]) -> ForkServer | None:
    """Fork the fork server for writers of `url`, each running `run_writer(fd)` (once; only while this
    process has one thread)."""
    global _server
    if _server is not None or _threads() != 1:
        return _server
    from sqlalchemy.engine import make_url

    make_url(url).get_dialect()  # imports the driver here, once, for every writer
    ours, theirs = socket.socketpair()
    gc.freeze()  # the forks' collector leaves the inherited objects alone: their pages stay shared
    try:
        pid = os.fork()
    except OSError:
        gc.unfreeze()
        ours.close()
        theirs.close()
        raise
    if pid == 0:
        ours.close()
        _named(FORK_SERVER_NAME)
        _serve(theirs, run_writer)
    gc.unfreeze()
    theirs.close()
    _server = ForkServer(pid, ours)
    return _server


def _threads() -> int:
    """This process's threads, those the interpreter did not start (a driver's, gRPC's) included."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def running() -> ForkServer | None:
    """This process's fork server, if a serving role started one."""
    return _server


def _serve(sock: socket.socket, run_writer: Callable[[int], None]) -> None:
    """The fork server's loop: a writer for each socket end received, until the serving process closes."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the serving process decides when we end: it closes
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # writers reaped by the kernel
        while True:
            message, fds, _, _ = socket.recv_fds(sock, 1, 1)
            if not message or not fds:
                break
            pid = os.fork()
            if pid == 0:
                sock.close()
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                _named(WRITER_NAME)
                _writer(fds[0], run_writer)
            os.close(fds[0])
            sock.sendall(_PID.pack(pid))
    except BaseException:
        log.exception("the log writers' fork server failed")
        code = 1
    finally:
        os._exit(code)


def _named(name: str) -> None:
    with contextlib.suppress(OSError), open("/proc/self/comm", "w") as comm:
        comm.write(name)


def _writer(fd: int, run_writer: Callable[[int], None]) -> None:
    code = 0
    try:
        run_writer(fd)
    except BaseException:
        log.exception("the log's writer process failed")
        code = 1
    finally:
        os._exit(code)
