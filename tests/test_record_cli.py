"""`tablehall record MATCH`: a match played to its end through `tablehall play` on a real `tablehall serve`,
fetched with `tablehall record`, passes `tablehall verify`; a running match, an unknown or malformed id and
no service each say so in one line with their exit code."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import stop_process
from tests.test_cli_edges import closed_port, run

CLI = [sys.executable, "-m", "tablehall.cli"]
READY_S = 60.0
"""Bound on `tablehall serve` saying it serves (a hang fails, no timing threshold)."""


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    """A real `tablehall serve` (in-memory log) on a free port, ready once it prints where it serves."""
    command = [*CLI, "serve", "--port", "0", "--web-port", "off", "--database-url", "memory"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    threading.Thread(target=lambda: [lines.put(line) for line in process.stdout or ()], daemon=True).start()
    try:
        line = lines.get(timeout=READY_S)
        where = re.search(r"serving on (\S+)", line)
        assert where, line
        yield where.group(1)
    finally:
        stop_process(process)


def played_to_the_end(address: str, game: str) -> str:
    """The id of a match `tablehall play` played to its end against bots (a short one)."""
    short = ["--points", "30"] if game == "spectacular-bid" else ["--start-score", "60"]
    ran = run("play", "--address", address, "--game", game, "--think", "0", *short, stdin="1\n" * 4000)
    assert ran.code == 0, ran.err + ran.out[-2000:]
    assert re.search(r"^Match over: ", ran.out, re.M), ran.out[-2000:]
    match = re.search(r"^Match ([0-9a-f]{16}) ", ran.out, re.M)
    assert match, ran.out[:500]
    return match.group(1)


@pytest.mark.parametrize("game", ["spectacular-bid", "501"])
def test_a_finished_match_is_fetched_and_verifies(address: str, game: str, tmp_path: Path) -> None:
    match_id = played_to_the_end(address, game)
    out = tmp_path / "match.json"
    fetched = run("record", match_id, "--address", address, "--out", str(out))
    assert fetched.code == 0 and "Traceback" not in fetched.err, fetched.err
    record = json.loads(out.read_text())
    assert record["match_id"] == match_id and record["game"] == game and record["commitments"]
    checked = run("verify", str(out))
    assert checked.code == 0, checked.err
    assert checked.out.startswith("verified: ")


def test_the_record_goes_to_stdout_without_out(address: str) -> None:
    match_id = played_to_the_end(address, "spectacular-bid")
    fetched = run("record", match_id, "--address", address)
    assert fetched.code == 0 and json.loads(fetched.out)["match_id"] == match_id


def test_a_running_match_has_no_record_yet(address: str, tmp_path: Path) -> None:
    left = run("play", "--address", address, "--game", "501", "--think", "0", stdin="q\n")
    match_id = re.search(r"^Match ([0-9a-f]{16}) ", left.out, re.M)
    assert left.code == 0 and match_id, left.out
    out = tmp_path / "match.json"
    fetched = run("record", match_id.group(1), "--address", address, "--out", str(out))
    assert fetched.code == 1
    assert "is still being played" in fetched.one_line("record") and not out.exists()


@pytest.mark.parametrize(
    ("match_id", "says"),
    [("0123456789abcdef", "(not_found)"), ("not-an-id", "is not a match id"), ("x" * 5000, "(malformed_input)")],
    ids=["unknown", "malformed", "huge"],
)
def test_an_unknown_or_malformed_id_is_one_line(address: str, match_id: str, says: str) -> None:
    fetched = run("record", match_id, "--address", address)
    assert fetched.code == 2
    line = fetched.one_line("record")
    assert says in line and len(line) < 400


def test_no_service_is_one_line() -> None:
    with closed_port() as port:
        fetched = run("record", "0123456789abcdef", "--address", f"127.0.0.1:{port}")
    assert fetched.code == 2 and "no tablehall service answers" in fetched.one_line("record")


def test_a_demo_record_has_no_commitments_and_verify_says_where_to_get_one(tmp_path: Path) -> None:
    demo = tmp_path / "demo.json"
    made = run("demo", "--pace", "0", "--record", str(demo), stdin="")
    assert made.code == 0, made.err
    checked = run("verify", str(demo))
    assert checked.code == 2
    assert "tablehall record MATCH" in checked.one_line("verify")
