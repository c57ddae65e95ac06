"""A real writing process for tests/test_durability_batches.py: appends groups of log entries (each group
one `append_all`, as a command and the deal it calls for) to many matches at once through `SqlStorage`,
and prints a line as each group is acknowledged. After `--hold-after` acknowledgements it stops inside the
next batch's transaction, its rows written but not committed, prints `held`, and waits to be killed.

    python -m tests.batch_writer URL --matches 20 --group 3 --hold-after 60
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
from collections.abc import Iterable, Iterator
from typing import Any

from workers.sql import SqlStorage, log_writer, writes
from workers.storage import LogEntry, MatchEntry, Progress

PARTITION = 0


def heard(lines: Iterable[str], acked: dict[str, int]) -> Iterator[tuple[str, list[str]]]:
    """Each line a writer process says, as its word and the rest; its `acked` lines are kept in `acked`
    (per match the newest seq acknowledged) as they pass."""
    for line in lines:
        word, *rest = line.split()
        if word == "acked":
            acked[rest[0]] = max(acked.get(rest[0], 0), int(rest[1]))
        yield word, rest


def say(line: str) -> None:
    """One whole line in one write to the pipe: the writer thread's line never lands inside another's."""
    os.write(sys.stdout.fileno(), (line + "\n").encode())


def hold_inside_the_next_batch() -> None:
    """The next batch of appends writes its rows, then this thread says `held` and never commits. On
    PostgreSQL the batch goes as a transaction (not as one autocommitted statement, `pg_at_once`), so that
    there is a moment inside it to stop at."""
    appending = writes._appends
    log_writer.append_at_once = lambda *_: False  # type: ignore[assignment]

    def held(conn: Any, appends: list[tuple[int, writes.AppendOp]], *args: Any) -> None:
        appending(conn, appends, *args)
        say("held " + " ".join(f"{op.match_id}:{op.entries[-1].seq}" for _, op in appends))
        threading.Event().wait()  # until the test kills the process

    writes._appends = held  # type: ignore[assignment]


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("--matches", type=int, default=20)
    parser.add_argument("--group", type=int, default=3)
    parser.add_argument("--hold-after", type=int, default=60, help="0: never hold, append until killed")
    parser.add_argument("--writer", choices=["thread", "process"], default="thread",
                        help="the log's writer (a held batch stops inside the writer thread: thread)")  # fmt: skip
    args = parser.parse_args()
    os.environ["TABLEHALL_LOG_WRITER"] = args.writer
    storage = await SqlStorage.open(args.url)
    epoch = (await storage.claim("batch-writer", [PARTITION]))[PARTITION]
    ids = [f"b{i:03}" for i in range(args.matches)]
    for match_id in ids:
        entry = MatchEntry(match_id, "spectacular-bid", ("Ana", "Bia"), {}, (b"a" * 32, b"b" * 32), 0, 1, PARTITION)
        await storage.create(entry, epoch)
    say("created")
    acknowledged = 0

    async def play(match_id: str) -> None:
        nonlocal acknowledged
        seq = 0
        while True:
            group = [
                LogEntry(seq + i, seq + i, "command", i % 2, {"n": seq + i}, seq + i) for i in range(1, args.group + 1)
            ]
            seq += args.group
            # the progress row says which entry is the newest: it must move with the log, in the same commit
            await storage.append_all(match_id, PARTITION, epoch, group, Progress("in_progress", None, seq, True))
            say(f"acked {match_id} {seq}")
            acknowledged += 1
            if acknowledged == args.hold_after and args.hold_after > 0:
                hold_inside_the_next_batch()

    await asyncio.gather(*(play(match_id) for match_id in ids))


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
