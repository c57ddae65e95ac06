"""`tablehall bench log` (the event log's group commit, once `python -m workers.sql.bench`) runs as a
`tablehall bench` subcommand on a real SQLite file; a database URL it cannot use is one line and exit 2."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

CLI = [sys.executable, "-m", "tablehall.cli", "bench", "log"]


def test_it_prints_the_appends_per_second_and_writes_them(tmp_path: Path) -> None:
    file = tmp_path / "log.db"
    done = subprocess.run(
        [*CLI, "--database-url", f"sqlite:///{file}", "--matches", "12", "--per-match", "5"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = " ".join(done.stdout.split())
    assert re.search(r"sqlite: 60 appends from 12 concurrent matches in [\d.]+ s = [\d,]+ appends/s", printed)
    assert re.search(r"commit wait p50 [\d.]+ ms, p99 [\d.]+ ms$", printed)
    with sqlite3.connect(file) as db:
        assert db.execute("SELECT count(*) FROM matches").fetchone() == (12,)


def test_beside_a_busy_loop_it_says_so_and_every_append_is_written(tmp_path: Path) -> None:
    file = tmp_path / "log.db"
    done = subprocess.run(
        [*CLI, "--database-url", f"sqlite:///{file}", "--matches", "6", "--per-match", "4", "--busy-ms", "1"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert " ".join(done.stdout.split()).endswith(", beside a loop busy 1 ms a turn")
    with sqlite3.connect(file) as db:
        assert db.execute("SELECT count(*) FROM events").fetchone() == (24,)


def test_a_database_url_it_cannot_use_is_one_line_and_exit_2() -> None:
    done = subprocess.run([*CLI, "--database-url", "nosuch://x"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.startswith("tablehall bench: nosuch://x: no driver for 'nosuch'")
    assert len(done.stderr.splitlines()) == 1 and "Traceback" not in done.stderr


def test_workers_no_longer_carry_a_bench() -> None:
    workers = REPO / "workers"
    assert not (workers / "sql" / "bench.py").exists()
    upward = re.compile(r"^\s*(from|import) tablehall", re.M)
    assert not [path for path in workers.rglob("*.py") if upward.search(path.read_text(encoding="utf-8"))]
