"""`tablehall bench path` as a real process: both games' commands go through the service's own path, and a
seed makes two runs do exactly the same work (what an instruction count of the path relies on); with a
database, the durable path, its log writer a process."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from tablehall.bench_path import seeded_randomness
from tests.test_cli_edges import run


def _commands(out: str) -> int:
    row = next(line for line in out.splitlines() if re.match(r"\s*│\s*[\d,]+\s*│", line))
    return int(row.split("│")[1].replace(",", ""))


@pytest.mark.parametrize("game", ["spectacular-bid", "501"])
def test_a_seeded_run_plays_its_matches_and_does_the_same_work_again(game: str) -> None:
    args = ("bench", "path", "--game", game, "--matches", "3", "--concurrency", "2", "--seed", "7")
    first, second = run(*args, stdin=""), run(*args, stdin="")
    for ran in (first, second):
        assert ran.code == 0, ran.err[-3000:]
        assert "Traceback" not in ran.err
    assert _commands(first.out) > 3 * 20  # three whole matches' commands were answered
    assert _commands(first.out) == _commands(second.out)


def test_seeded_randomness_repeats_and_hands_back_the_os_source() -> None:
    real = os.urandom
    with seeded_randomness(3):
        drawn = os.urandom(16)
    with seeded_randomness(3):
        assert os.urandom(16) == drawn
    assert os.urandom is real


def test_a_durable_run_goes_through_the_log_writer_process(tmp_path: Path) -> None:
    """With a database the same path commits every change through the service's storage and its writer
    process, whose CPU a command is printed beside the service's."""
    url = f"sqlite:///{tmp_path / 'path.db'}"
    # enough matches that the writer's CPU spans several of /proc's 10 ms ticks
    ran = run("bench", "path", "--matches", "8", "--concurrency", "2", "--database-url", url, stdin="")
    assert ran.code == 0, ran.err[-3000:]
    assert "Traceback" not in ran.err
    assert "durable" in ran.out and "log writer" in ran.out
    assert _commands(ran.out) > 8 * 20
    row = next(line for line in ran.out.splitlines() if re.match(r"\s*│\s*[\d,]+\s*│", line))
    assert float(row.split("│")[-2]) > 0, "the writer process did the commits"
    engine = create_engine(url)
    with engine.connect() as conn:
        finished = conn.execute(text("SELECT count(*) FROM matches WHERE status = 'finished'")).scalar()
    engine.dispose()
    assert finished is not None and finished >= 8
