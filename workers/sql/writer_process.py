"""The log's writer in a process of its own: the group commit of `batching.GroupCommitter`, run by a child
with an interpreter of its own (`writer_child`, one thread), so that a batch never waits for the serving
process's event loop to hand over the GIL, nor the loop for the batch's Python work.

Why: in the writer thread each statement's way back into the interpreter waited up to the switch interval
for a saturated loop, so a batch of ~9 appends took ~8 ms while its own work was ~1.5 ms of CPU, and every
command waited that long for its commit (`tablehall bench service --database-url sqlite:…`).

The serving process keeps what callers see: `submit(op)` is awaited until the op's batch committed (its
result, or the exception it fails with), ops submitted in one turn of the loop leave together as one frame
on a socket pair, and each committed batch comes back as one frame, read by the loop itself (no thread).
While the child holds ops not yet answered, new ones wait and leave together once it answered them all: it
commits one batch at a time, so they would mostly wait there as well, and fewer, larger frames wake it (and
the loop) less often. `tablehall bench service` on SQLite: 42 % fewer frames (4,912 against 8,412 for
~58,000 ops); at 200 matches in flight 2–5 % more commands a second and a p99 6–15 % lower, at 50 the same
within the machine's noise (−4.5 to +4.2 %).
An op whose caller gave up before its frame left is never written; one sent already may be committed, as
with any write whose answer was lost. If the child dies, every op waiting on it fails with `WriterGone`
(its outcome unknown: the match actor reads the log, as after any failed commit) and the next op starts a
new child. The child ends when its socket closes: the serving process stopped, or was killed.

Where it starts: `tablehall serve` (gateway and worker in one interpreter, whose lock a writer thread shares)
forks a fork server at its start (`writer_fork`), and its writers are forks of that, up in milliseconds;
that makes the writer process its default. Anywhere else (`tablehall worker`, a library user, the tests'
storages) the writer thread stays the default, and a writer process is a new Python process importing
SQLAlchemy (~0.5 s of CPU). TABLEHALL_LOG_WRITER=thread or =process chooses either everywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import pickle
import socket
import struct
import subprocess
import sys
import time
from typing import Any, Protocol

from workers.sql import writer_fork
from workers.sql.batching import Op, Stats, settle, waited

log = logging.getLogger(__name__)

_LENGTH = struct.Struct(">I")
CHUNK = 1 << 18
"""The most one read takes off the socket. Reads go into a buffer kept for them (`Reading`): `recv(n)` would
allocate n bytes each time, and a batch's answer is ~60 bytes (with n at 1 MiB, each read cost ~70 µs)."""
STOP_S = 30.0
"""How long `close` waits for the child to commit what it holds and end."""


class WriterGone(Exception):
    """The writer process ended before this op's batch was answered: the op may or may not be committed."""


class Committer(Protocol):
    stats: Stats

    async def submit(self, op: Op) -> Any: ...

    def close(self) -> None: ...


def chosen_writer() -> str | None:
    """TABLEHALL_LOG_WRITER: `thread`, `process`, or None (unset, or neither: the default is kept)."""
    chosen = os.environ.get("TABLEHALL_LOG_WRITER", "").strip().lower()
    if chosen in ("process", "thread"):
        return chosen
    if chosen:
        log.warning("TABLEHALL_LOG_WRITER=%.40r is neither thread nor process: the default is kept", chosen)
    return None


def writer_in_process() -> bool:
    """As chosen; by default a process where a fork server runs (`tablehall serve`), else a thread."""
    chosen = chosen_writer()
    return chosen == "process" if chosen else writer_fork.running() is not None


def frame(value: object) -> bytes:
    payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(payload)) + payload


def sendable(outcome: object) -> object:
    """An outcome as the serving process can unpickle it (a driver's exception may not pickle)."""
    if not isinstance(outcome, BaseException):
        return outcome
    try:
        pickle.loads(pickle.dumps(outcome))
    except Exception:
        return RuntimeError(f"{type(outcome).__name__}: {str(outcome)[:500]}")
    return outcome


class Reading:
    """Reads from one socket into a buffer allocated once (see CHUNK)."""

    __slots__ = ("_chunk",)

    def __init__(self) -> None:
        self._chunk = memoryview(bytearray(CHUNK))

    def into(self, sock: socket.socket, inbox: bytearray) -> int:
        """Append what `sock` has (blocking or not, as the socket is) to `inbox`; 0 once it closed."""
        size = sock.recv_into(self._chunk)
        inbox += self._chunk[:size]
        return size


def frames(buffer: bytearray) -> list[Any]:
    """Take every whole frame off the front of `buffer`."""
    found, at = [], 0
    while len(buffer) - at >= _LENGTH.size:
        (size,) = _LENGTH.unpack_from(buffer, at)
        if len(buffer) - at - _LENGTH.size < size:
            break
        found.append(pickle.loads(memoryview(buffer)[at + _LENGTH.size : at + _LENGTH.size + size]))
        at += _LENGTH.size + size
    del buffer[:at]
    return found


class ProcessCommitter:
    """The serving process's side: ops out to the child, outcomes back to their callers."""

    def __init__(self, url: str, sqlite_synchronous: str | None, max_batch: int) -> None:
        self.stats = Stats()
        self._config = (url, sqlite_synchronous, max_batch)
        self._ids = itertools.count()
        self._waiting: dict[int, Op] = {}
        """Sent, not yet answered."""
        self._outbox: list[Op] = []
        self._unsent = bytearray()
        self._inbox = bytearray()
        self._reading = Reading()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._child: subprocess.Popen[bytes] | writer_fork.Forked | None = None
        self._sock: socket.socket | None = None
        self._closed = False
        self._start()

    def _start(self) -> None:
        ours, theirs = socket.socketpair()
        server = writer_fork.running()
        self._child = server.fork(theirs.fileno()) if server is not None else None
        if self._child is None:
            self._child = subprocess.Popen(
                [sys.executable, "-m", "workers.sql.writer_child", str(theirs.fileno())],
                pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL,
            )  # fmt: skip
        theirs.close()
        with contextlib.suppress(OSError):  # a child that is gone already: its reader meets the end
            ours.sendall(frame(self._config))  # now, into an empty socket: it connects while we go on
        ours.setblocking(False)
        self._sock, self._inbox, self._unsent = ours, bytearray(), bytearray()
        self._loop = None  # the reader is registered on the loop of the next submit

    async def submit(self, op: Op) -> Any:
        """Queue `op` and wait (without blocking the event loop) until its batch committed."""
        if self._closed:
            raise RuntimeError("storage is closed")
        loop = asyncio.get_running_loop()
        if self._sock is None:
            self._start()
        if self._loop is not loop:
            self._attach(loop)
        op.future = loop.create_future()
        op.submitted = time.monotonic()
        if not self._outbox and not self._waiting:
            loop.call_soon(self._flush)
        self._outbox.append(op)
        try:
            return await op.future
        except asyncio.CancelledError:
            op.dropped = not op.taken
            raise

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        assert self._sock is not None
        self._loop = loop
        loop.add_reader(self._sock.fileno(), self._readable)
        if self._unsent:
            loop.add_writer(self._sock.fileno(), self._writable)

    def _flush(self) -> None:
        """One frame for the ops of this turn (a caller that gave up already is left out)."""
        ops, self._outbox = [op for op in self._outbox if not op.future.done()], []
        if not ops or self._sock is None:
            for op in ops:
                op.future.set_exception(WriterGone("the log's writer process is not running"))
            return
        sent = []
        handed = time.monotonic()
        for op in ops:
            number = next(self._ids)
            op.taken, op.handed = True, handed
            self._waiting[number] = op
            sent.append((number, op))
        self._send(frame(sent))

    def _send(self, frame: bytes) -> None:
        assert self._sock is not None and self._loop is not None
        if self._unsent:
            self._unsent += frame
            return
        try:
            written = self._sock.send(frame)
        except (BlockingIOError, InterruptedError):
            written = 0
        except OSError:
            self._gone()
            return
        if written < len(frame):
            self._unsent += frame[written:]
            self._loop.add_writer(self._sock.fileno(), self._writable)

    def _writable(self) -> None:
        assert self._sock is not None and self._loop is not None
        try:
            written = self._sock.send(self._unsent)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._gone()
            return
        del self._unsent[:written]
        if not self._unsent:
            self._loop.remove_writer(self._sock.fileno())

    def _readable(self) -> None:
        if self._sock is None:  # ended already (an answer read after `close`)
            return
        try:
            read = self._reading.into(self._sock, self._inbox)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            read = 0
        if not read:
            self._gone()
            return
        answered = time.monotonic()
        for size, outcomes, began, ended in frames(self._inbox):
            self.stats.batches += 1
            self.stats.ops += size
            self.stats.largest = max(self.stats.largest, size)
            ops, found = [], []
            for number, outcome in outcomes:
                op = self._waiting.pop(number, None)
                if op is not None:  # else failed already (`_gone`)
                    ops.append(op)
                    found.append(outcome)
            waited(ops, began, ended, answered)
            settle(ops, found)
        if self._outbox and not self._waiting:
            self._flush()

    def _gone(self) -> None:
        """The child ended (or its socket broke): what it was sent fails; the next op starts a new one."""
        sock, child, self._sock, self._child = self._sock, self._child, None, None
        if sock is not None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(sock.fileno())
                self._loop.remove_writer(sock.fileno())
            sock.close()
        waiting, self._waiting = self._waiting, {}
        for op in waiting.values():
            if not op.future.done():
                op.future.set_exception(WriterGone("the log's writer process ended during this write"))
        if self._outbox:  # held back behind what it was sent: never sent, so nothing of them was written
            self._flush()
        if child is not None and not self._closed:
            code = None
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = child.wait(0.1)  # reaped, when it has ended already
            log.error("the log's writer process ended (exit code %s); a new one starts with the next write", code)

    def close(self) -> None:
        """Let the child commit what it was sent, then end it (blocking: call it off the event loop)."""
        self._closed = True
        sock, child, loop = self._sock, self._child, self._loop
        if sock is None or child is None:
            return
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)  # the child's EOF: it commits what it holds, answers, and ends
        try:
            child.wait(STOP_S)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the answers still in the socket reach their callers first
                loop.call_soon_threadsafe(self._readable)
                return
        self._gone()
