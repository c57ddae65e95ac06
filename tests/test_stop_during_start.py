"""A SIGTERM that reaches `tablehall serve` while it is still starting (its worker processes spawned, the
gateway not yet serving) stops it cleanly: it finishes its start, stops at once, ends its workers, exits 0.
Before, the handler came only once it served, so such a SIGTERM ended it on the spot and its worker went on
running with no parent (seen as `tests/test_loop_first.py` failing now and then with exit -15)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tablehall.processes import children, stat_fields
from tests.durability import REPO
from tests.metrics_support import until
from tests.processes import stop_process
from tests.writer_processes import BOUND_S


def _workers_of(pid: int) -> list[int]:
    """`pid`'s child processes started as `tablehall.cli worker` (a fork of `serve` keeps serve's argv)."""
    found = []
    for child in children(pid):
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:4] == [b"-m", b"tablehall.cli", b"worker"]:
            found.append(child)
    return found


def _gone(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is None or fields[0] == "Z"


def test_a_sigterm_while_serve_starts_ends_it_and_its_workers_cleanly(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--web-port", "off", "--workers", "1"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TABLEHALL_")}
    with (tmp_path / "said.txt").open("w") as said:
        server = subprocess.Popen(
            [*command, "--database-url", f"sqlite:///{tmp_path / 'start.db'}"],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=said, text=True,
        )  # fmt: skip
        try:
            until(lambda: _workers_of(server.pid), BOUND_S, "serve's worker process")
            (worker,) = _workers_of(server.pid)
            server.send_signal(signal.SIGTERM)  # the worker is only starting: serve has not said it serves
            out, _ = server.communicate(timeout=BOUND_S)
        finally:
            stop_process(server)
    assert server.returncode == 0, (tmp_path / "said.txt").read_text()[-2000:]
    assert "serving on" in out and "shutting down" in out, out
    until(lambda: _gone(worker), BOUND_S, f"worker {worker} to end with serve")
