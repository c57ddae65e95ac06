"""`tablehall bench lobby`: a tiny run against a real embedded `tablehall serve` prints its figures."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import REPO


def test_a_tiny_run_prints_join_to_seated_and_the_mean_gap() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tablehall.cli", "bench", "lobby", "--players", "12", "--over-s", "1", "--grace-s", "5"],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = " ".join(done.stdout.split())
    assert re.search(r"12 players joined the spectacular-bid queue over 1 s", out), out
    assert re.search(r"join → seated p50 +\d+ ms p99 +\d+ ms", out), out
    assert re.search(r"tables made \d+ mean rating gap [\d.]+", out), out
