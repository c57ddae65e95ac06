"""`tablehall lobby ...` against a real `tablehall serve` process (its embedded pairing loop): two players
register, join, and are seated at the same table; a second join is refused in one line."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablehall.client import Client
from tests.processes import stop_process
from tests.test_tournament_cli import REPO, tablehall


@pytest.fixture
def address(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'lobby.db'}"
    command = [sys.executable, "-m", "tablehall.cli", "serve", "--port", "0", "--database-url", url]
    server = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert "serving on" in line, line
        yield line.split()[3]
    finally:
        stop_process(server)


def key_of(address: str, name: str) -> str:
    done = tablehall("lobby", "register", name, "--address", address)
    assert f"player '{name}'" in done.stdout and "export TABLEHALL_PLAYER_KEY=" in done.stderr
    return done.stdout.splitlines()[1]


def test_two_players_join_from_the_command_line_and_sit_at_one_table(address: str) -> None:
    ana, bia = key_of(address, "Ana"), key_of(address, "Bia")
    assert tablehall("lobby", "whoami", "--address", address, "--key", ana).stdout.startswith("Ana (id ")
    join = [sys.executable, "-m", "tablehall.cli", "lobby", "join", "--points", "50", "--address", address, "--key"]
    waiting = [subprocess.Popen([*join, key], cwd=REPO, stdout=subprocess.PIPE, text=True) for key in (ana, bia)]
    outs = [p.communicate(timeout=60)[0] for p in waiting]
    assert [p.returncode for p in waiting] == [0, 0], outs
    matches = {re.search(r"seated: match ([0-9a-f]{16}), seat (\d)", out).groups() for out in outs}  # type: ignore[union-attr]
    assert len({m for m, _ in matches}) == 1 and {s for _, s in matches} == {"0", "1"}
    assert f"--token {ana} --names Ana,Bia" in outs[0] or f"--token {ana} --names Bia,Ana" in outs[0]


def test_a_second_join_is_refused_in_one_line_and_leave_empties_the_queue(address: str) -> None:
    ana = key_of(address, "Ana")
    env = {"TABLEHALL_PLAYER_KEY": ana}
    tablehall("lobby", "join", "--game", "501", "--no-wait", "--address", address, env=env)
    twice = tablehall("lobby", "join", "--no-wait", "--address", address, check=1, env=env)
    assert twice.stderr.count("\n") == 1 and "already_queued" in twice.stderr
    assert tablehall("lobby", "leave", "--address", address, env=env).stdout == "left the queue\n"
    nobody = tablehall("lobby", "leave", "--address", address, check=1, env=env)
    assert "(NOT_FOUND)" in nobody.stderr or "not_found" in nobody.stderr


def test_a_player_plays_a_bot_from_the_command_line_and_the_bot_acts(address: str) -> None:
    """`tablehall lobby bot` seats the player at once against a bot the serve's Lobby plays: the bot's
    seat has readied (its first act) when the player looks."""
    ana = key_of(address, "Ana")
    done = tablehall("lobby", "bot", "--level", "greedy", "--points", "40", "--address", address, "--key", ana)
    found = re.search(r"seated: match ([0-9a-f]{16}), seat (\d)", done.stdout)
    assert found is not None and "Bot (greedy)" in done.stdout, done.stdout
    match_id, seat = found.group(1), int(found.group(2))
    assert asyncio.run(asyncio.wait_for(_bot_acts(address, match_id, 1 - seat), 30)), "the bot never readied"
    refused = tablehall("lobby", "bot", "--level", "nobody", "--address", address, "--key", ana, check=2)
    assert "invalid choice" in refused.stderr


async def _bot_acts(address: str, match_id: str, bot_seat: int) -> bool:
    """Whether the bot's seat readies (its first act), as a spectator's stream shows it."""
    async with Client(address) as client:
        async for _seq, view in client.spectator(match_id).watch():
            if bot_seat in view.get("ready", []):
                return True
    return False


def test_the_challenge_list_shows_each_challenge_s_time_left(address: str) -> None:
    ana, bia = key_of(address, "Ana"), key_of(address, "Bia")
    opened = tablehall("lobby", "challenge", "open", "--no-wait", "--address", address, "--key", ana)
    challenge_id = re.search(r"challenge ([0-9a-f]{16})", opened.stdout).group(1)  # type: ignore[union-attr]
    listed = tablehall("lobby", "challenge", "list", "--address", address, "--key", bia).stdout
    line = next(x for x in listed.splitlines() if x.startswith(challenge_id))
    left = re.search(r"expires in (\d+):(\d\d)$", line)
    assert left is not None, line
    assert 0 < int(left.group(1)) * 60 + int(left.group(2)) <= 600, "10 minutes at most (TABLEHALL_LOBBY_CHALLENGE_S)"
