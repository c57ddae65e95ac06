"""`tablehall bench floor` plays two-seat matches of bare messages through a real grpc.aio server process."""

from __future__ import annotations

import re
import subprocess
import sys
import zlib
from collections import Counter


def _floor(*flags: str) -> str:
    """What `tablehall bench floor` prints with these flags (its table on one line); it must exit 0."""
    done = subprocess.run(
        [sys.executable, "-m", "tablehall.cli", "bench", "floor", "--commands", "7", "--seconds", "0", *flags],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())


def test_every_match_plays_all_its_commands_and_both_sides_cpu_is_printed() -> None:
    printed = _floor("--matches", "3")
    row = re.search(r"│ ([\d,]+) │ ([\d,]+) │ [\d.]+ │ [\d.]+ │ ([\d.]+) │ ([\d.]+) │", printed)
    assert row, printed
    assert int(row.group(1).replace(",", "")) == 3 * 7  # one match per slot, every command answered
    assert float(row.group(3)) > 0 and float(row.group(4)) > 0


def test_the_durable_floor_commits_every_command_before_its_answer(tmp_path: object) -> None:
    db = f"sqlite:///{tmp_path}/floor.db"
    printed = _floor("--matches", "3", "--database-url", db)
    row = re.search(r"│ ([\d,]+) │ ([\d,]+) │", printed)
    assert row and int(row.group(1).replace(",", "")) == 3 * 7, printed
    assert "every command committed to sqlite before its answer" in printed
    import sqlite3

    with sqlite3.connect(db.removeprefix("sqlite:///")) as logged:
        assert logged.execute("SELECT count(*) FROM events").fetchone() == (3 * 7,)
        assert logged.execute("SELECT count(*) FROM matches").fetchone() == (3,)


def test_the_relayed_floor_sends_each_match_to_one_worker_which_logs_every_command(tmp_path: object) -> None:
    """`--workers`: a relay process and worker processes; each match's commands all reach one worker (its
    partition in the log), and every one is logged before its answer."""
    db = f"sqlite:///{tmp_path}/floor.db"
    printed = _floor("--matches", "6", "--workers", "2", "--database-url", db)
    row = re.search(r"│ ([\d,]+) │ ([\d,]+) │", printed)
    assert row and int(row.group(1).replace(",", "")) == 6 * 7, printed
    assert "through a relay and 2 worker processes" in printed
    assert re.search(r"relay [\d.]+ ms, workers [\d.]+ ms \(each command appended to the log", printed), printed
    import sqlite3

    with sqlite3.connect(db.removeprefix("sqlite:///")) as logged:
        assert logged.execute("SELECT count(*) FROM events").fetchone() == (6 * 7,)
        per_partition = dict(logged.execute("SELECT partition, count(*) FROM matches GROUP BY partition").fetchall())
    by_hash = Counter(zlib.crc32(str(match).encode()) % 2 for match in range(6))
    assert per_partition == by_hash == {0: 2, 1: 4}, "matches 0-5 go to the worker their key's hash names"
