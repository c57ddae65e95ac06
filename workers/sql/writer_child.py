"""The log's writer process (`writer_process`): reads frames of ops off its socket until it closes and commits
each frame's ops in the order they came, in batches as the writer thread groups them (`batching.batches`:
up to `max_batch` ops, a solo op alone), answering each batch with one frame.

One thread: the serving process sends a frame only once the one before it is answered, so the ops that
queued meanwhile arrive as one frame and a frame is the group commit's group. Reading and committing in
one thread spares every batch a hand-over between two threads (a wake-up and the interpreter's lock)."""

from __future__ import annotations

import contextlib
import signal
import socket
import sys
import threading
import time

from workers import loop_first
from workers.sql.batching import Op, Stats, batches, outcomes
from workers.sql.log_writer import LogWriter, writing_engine
from workers.sql.writer_process import Reading, frame, frames, sendable


class _Committer:
    """The writer's connection, and how a frame of numbered ops is committed and answered."""

    def __init__(self, sock: socket.socket, url: str, synchronous: str | None, max_batch: int) -> None:
        self.sock, self.max_batch, self.stats = sock, max_batch, Stats()
        self.writer = LogWriter(writing_engine(url, synchronous))
        self.writer.connect()

    def commit(self, numbered: list[tuple[int, Op]]) -> None:
        """Every batch of the frame committed (or refused, op by op) and answered, in order."""
        numbers = {id(op): number for number, op in numbered}
        for batch in batches([op for _, op in numbered], self.max_batch):
            began = time.monotonic()  # the serving process's clock too: the phases of its metrics
            found = outcomes(self.writer.apply, batch, self.stats)
            answered = [(numbers[id(op)], sendable(outcome)) for op, outcome in zip(batch, found, strict=True)]
            with contextlib.suppress(OSError):  # the serving process is gone: nobody waits for this answer
                self.sock.sendall(frame((len(batch), answered, began, time.monotonic())))


def run(fd: int) -> None:
    """Read frames until the socket closes, commit and answer each; the first one is the config."""
    loop_first.step_aside()  # the serving process's loop first
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the serving process decides when this one ends:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # it closes the socket, and we end after the last batch
    sock = socket.socket(fileno=fd)
    inbox, reading = bytearray(), Reading()
    committer: _Committer | None = None
    while _received(sock, reading, inbox):
        for message in frames(inbox):
            if committer is None:  # imported SQLAlchemy and connected only now: nothing is answered before
                committer = _Committer(sock, *message)
            else:
                committer.commit(message)
    if committer is not None:
        committer.writer.close()
    sock.close()


def _received(sock: socket.socket, reading: Reading, inbox: bytearray) -> int:
    """The next bytes from the serving process onto `inbox`: how many, 0 once it closed its end (or was
    killed: a reset)."""
    try:
        return reading.into(sock, inbox)
    except OSError:
        return 0


if __name__ == "__main__":
    threading.current_thread().name = "tablehall-log-writer"
    run(int(sys.argv[1]))
