"""The organizers' command line against a real `tablehall serve` process: organizer keys, a round robin
created from a CSV, played by four `tablehall tournament bot` processes, its status, standings and the
archive of its records (each record replayed by `tablehall replay`); bulk tables held and started; exit
codes for refusals (1) and bad input (2)."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.processes import stop_process

REPO = Path(__file__).resolve().parents[1]


def tablehall(*args: str, check: int | None = 0, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "tablehall.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=120,
        env={**os.environ, **(env or {})},
    )  # fmt: skip
    if check is not None:
        assert done.returncode == check, (done.stdout, done.stderr)
    return done


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A `tablehall serve` on a new SQLite file, and that database's URL."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--database-url", url]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert "serving on" in line, line
        yield line.split()[3], url
    finally:
        stop_process(server)


def test_organizer_keys_are_shown_once_and_names_are_unique(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'keys.db'}"
    made = tablehall("organizer", "create", "Chess Club", "--database-url", url)
    key = made.stdout.strip().splitlines()[-1]
    assert key.startswith("tho_") and len(key) > 40
    again = tablehall("organizer", "create", "Chess Club", "--database-url", url, check=2)
    assert "exists already" in again.stderr and "Traceback" not in again.stderr
    assert "database" in tablehall("organizer", "create", "X", "--database-url", "memory", check=2).stderr


def test_a_round_robin_from_the_command_line(served: tuple[str, str], tmp_path: Path) -> None:
    address, url = served
    key = tablehall("organizer", "create", "Arbiter", "--database-url", url).stdout.strip().splitlines()[-1]
    remote = ["--address", address, "--key", key]
    players = tmp_path / "players.csv"
    players.write_text("name\nAnn\nBob\nCid\nDee\n")
    tokens = tmp_path / "tokens.csv"
    made = tablehall("tournament", "create", "--name", "Club night", "--game", "spectacular-bid", "--players",
                     str(players), "--format", "round-robin", "--points", "20", "--round-pause", "0",
                     "--out", str(tokens), *remote)  # fmt: skip
    assert "round 1: 2 tables scheduled" in made.stderr
    rows = list(csv.DictReader(tokens.open()))
    assert [r["player"] for r in rows] == ["Ann", "Bob", "Cid", "Dee"] and all(r["token"] for r in rows)
    tournament_id = made.stderr.split("tournament ")[1].split(":")[0]

    bot = [sys.executable, "-m", "tablehall.cli", "tournament", "bot", tournament_id, "--address", address]
    bots = [subprocess.Popen([*bot, "--token", r["token"]], cwd=REPO, stdout=subprocess.PIPE, text=True) for r in rows]
    try:
        outputs = [bot.communicate(timeout=180)[0] for bot in bots]
    finally:
        for bot in bots:
            stop_process(bot)
    assert all(bot.returncode == 0 for bot in bots), outputs
    ranks = sorted(int(out.strip().splitlines()[-1].split("rank ")[1]) for out in outputs)
    assert ranks == [1, 2, 3, 4]
    assert all(out.count("round ") >= 3 for out in outputs)  # three rounds, a table in each

    status = tablehall("tournament", "status", tournament_id, *remote).stdout
    assert "round 3 of 3, finished" in status
    standings = tablehall("tournament", "standings", tournament_id, *remote).stdout
    assert "Buchholz" in standings and all(name in standings for name in ("Ann", "Bob", "Cid", "Dee"))

    archive = tmp_path / "records.tar.gz"
    tablehall("tournament", "export", tournament_id, "--out", str(archive), *remote)
    with tarfile.open(archive) as tar:
        names = tar.getnames()
        assert {"tournament.json", "standings.json"} <= set(names)
        records = [n for n in names if n.startswith("round-")]
        assert len(records) == 6
        for name in records:
            member = tar.extractfile(name)
            assert member is not None
            record = tmp_path / "one.json"
            record.write_bytes(member.read())
            outcome = json.loads(tablehall("replay", str(record)).stdout)
            assert outcome["status"] == "finished"

    refused = tablehall("tournament", "status", tournament_id, "--address", address, "--key", "tho_wrong", check=1)
    assert "(unauthenticated)" in refused.stderr and "Traceback" not in refused.stderr
    missing = tablehall("tournament", "create", "--name", "x", "--game", "501", "--players", str(tmp_path / "none"),
                        "--format", "seating", *remote, check=2)  # fmt: skip
    assert "cannot read" in missing.stderr


def test_bulk_tables_held_then_started(served: tuple[str, str], tmp_path: Path) -> None:
    address, url = served
    key = tablehall("organizer", "create", "Bulk", "--database-url", url).stdout.strip().splitlines()[-1]
    pairs = tmp_path / "tables.csv"
    pairs.write_text("".join(f"p{2 * i},p{2 * i + 1}\n" for i in range(30)))
    env = {"TABLEHALL_ORGANIZER_KEY": key}
    made = tablehall("tables", "create", "--game", "spectacular-bid", "--tables", str(pairs), "--start-at", "+1h",
                     "--address", address, env=env)  # fmt: skip
    rows = list(csv.DictReader(made.stdout.splitlines()))
    assert len(rows) == 60 and len({r["match_id"] for r in rows}) == 30
    batch = made.stderr.split("batch ")[1].split(":")[0]
    started = tablehall("tables", "start", batch, "--address", address, env=env)
    assert f"batch {batch}: 30 held tables started now" in started.stdout
    duplicate = tmp_path / "dup.csv"
    duplicate.write_text("ann,bob\nbob,cid\n")
    refused = tablehall("tables", "create", "--game", "spectacular-bid", "--tables", str(duplicate),
                        "--address", address, env=env, check=1)  # fmt: skip
    assert "player 'bob' is also at table 1" in refused.stderr and "(batch_rejected)" in refused.stderr
    bad_time = tablehall("tables", "create", "--game", "501", "--tables", str(pairs), "--start-at", "soon",
                         "--address", address, env=env, check=2)  # fmt: skip
    assert "--start-at 'soon'" in bad_time.stderr
