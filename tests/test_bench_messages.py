"""`tablehall bench messages` runs a real echo server process and prints a figure for each side."""

from __future__ import annotations

import re
import subprocess
import sys


def test_it_prints_the_cpu_per_message_of_both_sides() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tablehall.cli", "bench", "messages", "--messages", "400", "--streams", "4"],
        capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    printed = " ".join(done.stdout.split())
    assert "400 round trips on 4 streams" in printed
    assert re.search(r"client \d+ µs, server \d+ µs", printed), printed
