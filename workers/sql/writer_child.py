"""The log's writer process (`writer_process`): reads ops off its socket until it closes, commits them in
groups (`batching.GroupCommitter`, as the writer thread does), and answers each batch with one frame."""

from __future__ import annotations

import contextlib
import pickle
import signal
import socket
import sys
import threading

from workers import loop_first
from workers.sql.batching import GroupCommitter, Op
from workers.sql.log_writer import LogWriter, writing_engine
from workers.sql.writer_process import Reading, frame, frames


class _ChildCommitter(GroupCommitter):
    """The child's group commit: ops come off the socket, outcomes go back on it (one frame a batch)."""

    sock: socket.socket
    numbers: dict[int, int]
    writer: LogWriter

    def _gave_up(self, op: Op) -> bool:
        return False

    def _answer(self, batch: list[Op], outcomes: list[object]) -> None:
        numbers = self.numbers
        answered = [(numbers.pop(id(op)), _sendable(outcome)) for op, outcome in zip(batch, outcomes, strict=True)]
        with contextlib.suppress(OSError):  # the serving process is gone: nobody waits for this answer
            self.sock.sendall(frame((len(batch), answered)))


def _sendable(outcome: object) -> object:
    """An outcome as the serving process can unpickle it (a driver's exception may not pickle)."""
    if not isinstance(outcome, BaseException):
        return outcome
    try:
        pickle.loads(pickle.dumps(outcome))
    except Exception:
        return RuntimeError(f"{type(outcome).__name__}: {str(outcome)[:500]}")
    return outcome


def run(fd: int) -> None:
    """Read ops until the socket closes, commit them in groups, answer each batch."""
    loop_first.step_aside()  # the serving process's loop first (its threads inherit this)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the serving process decides when this one ends:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # it closes the socket, and we end after the last batch
    sock = socket.socket(fileno=fd)
    inbox, reading = bytearray(), Reading()
    committer: _ChildCommitter | None = None
    numbers: dict[int, int] = {}
    while _received(sock, reading, inbox):
        for message in frames(inbox):
            if committer is None:
                committer = _committer(sock, numbers, *message)
                continue
            for number, op in message:
                numbers[id(op)] = number
                committer.put(op)
    if committer is not None:
        committer.close()
        committer.writer.close()
    sock.close()


def _received(sock: socket.socket, reading: Reading, inbox: bytearray) -> int:
    """The next bytes from the serving process onto `inbox`: how many, 0 once it closed its end (or was
    killed: a reset)."""
    try:
        return reading.into(sock, inbox)
    except OSError:
        return 0


def _committer(
    sock: socket.socket, numbers: dict[int, int], url: str, synchronous: str | None, max_batch: int
) -> _ChildCommitter:
    """The writer's engine and group commit (imported here: the child answers nothing before its config)."""
    writer = LogWriter(writing_engine(url, synchronous))
    writer.connect()
    committer = _ChildCommitter(writer.apply, max_batch=max_batch, name="tablehall-log-writer")
    committer.sock, committer.numbers = sock, numbers
    committer.writer = writer
    return committer


if __name__ == "__main__":
    threading.current_thread().name = "tablehall-log-writer-reader"
    run(int(sys.argv[1]))
