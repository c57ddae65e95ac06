"""`tablehall play` and `tablehall bot` as real processes against a real gateway on a free port."""

from __future__ import annotations

import asyncio
import re
import sys
from typing import Any

from tablehall.bots import run_bot
from tablehall.client import Client
from tests.test_bots import serve

CLI = [sys.executable, "-m", "tablehall.cli"]
TILE = re.compile(r"\[(\d)\|(\d)\]")


async def run_cli(args: list[str], stdin: str = "", timeout: float = 60.0) -> tuple[int, str]:
    """Runs `tablehall ARGS` with `stdin` piped in; returns its exit code and its output."""
    process = await asyncio.create_subprocess_exec(
        *CLI, *args, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(stdin.encode()), timeout)
    except TimeoutError:
        process.kill()
        out, _ = await process.communicate()
        raise AssertionError(f"tablehall {' '.join(args)} did not finish:\n{out.decode()[-3000:]}") from None
    assert process.returncode is not None
    return process.returncode, out.decode()


def ones(n: int = 4000) -> str:
    return "1\n" * n


def test_bot_command_plays_a_seat_to_the_end() -> None:
    async def body(address: str, client: Client) -> tuple[int, str, dict[str, Any]]:
        match = await client.create_match("spectacular-bid", ["Ana", "Bot"])
        args = ["bot", "--address", address, "--match", match.match_id, "--token", match.tokens[1], "--greedy"]
        (code, out), final = await asyncio.gather(
            run_cli(args), run_bot(address, match.match_id, match.tokens[0], greedy=False, seed=5)
        )
        return code, out, final

    code, out, final = serve(body)
    assert code == 0, out
    lines = out.strip().splitlines()
    assert any(re.match(r"\s*\d+\s+play \[\d\|\d\]", line) for line in lines), out
    winner = "seat 1 (this bot)" if final["winner"] == 1 else "seat 0"
    reason = {"resign": "resignation"}.get(final["reason"], final["reason"])
    assert lines[-1].startswith(f"Match over: {winner} won by {reason}"), lines[-1]


def test_bot_command_reports_a_bad_token() -> None:
    async def body(address: str, client: Client) -> tuple[int, str]:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        return await run_cli(["bot", "--address", address, "--match", match.match_id, "--token", "nope"])

    code, out = serve(body)
    assert code == 2 and "tablehall bot:" in out and "(unauthenticated)" in out and "Traceback" not in out


def test_play_vs_bot_spectacular_bid_through_stdin() -> None:
    async def body(address: str, client: Client) -> tuple[int, str]:
        return await run_cli(["play", "--address", address, "--think", "0", "--points", "30"], ones())

    code, out = serve(body)
    assert code == 0, out[-3000:]
    assert "1. Continue" in out and "Your hand: [" in out and "count" in out
    assert re.search(r"^Match over: (You|Bot) won by ", out, re.M), out[-2000:]


def test_play_vs_bots_501_through_stdin() -> None:
    async def body(address: str, client: Client) -> tuple[int, str]:
        args = ["play", "--address", address, "--game", "501", "--think", "0", "--start-score", "60"]
        return await run_cli(args, ones())

    code, out = serve(body)
    assert code == 0, out[-3000:]
    assert "Your cards: face down (blind)" in out and "look at my cards" in out
    assert re.search(r"^Match over: .+ won \(You -?\d+, Bot 1 -?\d+, Bot 2 -?\d+\)$", out, re.M), out[-2000:]


def test_play_join_a_seat_with_a_scripted_sequence() -> None:
    """Bad input and the rules are answered without losing the turn; q resigns."""

    async def body(address: str, client: Client) -> tuple[int, str, dict[str, Any]]:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        args = ["play", "--address", address, "--join", match.match_id, "--token", match.tokens[0]]
        (code, out), final = await asyncio.gather(
            run_cli(args, "banana\n7\nr\n1\nq\n"), run_bot(address, match.match_id, match.tokens[1], greedy=True)
        )
        return code, out, final

    code, out, final = serve(body)
    assert code == 0, out
    assert "'banana' is not a choice" in out and "no action 7: choose 1 to 1" in out
    assert "Spectacular Bid" in out and "SB-10" in out  # the rules, as the service sends them
    assert final["winner"] == 1 and final["reason"] == "resign"
    # named by where they sit; the points are the final view's: the bot's forced lead may come before the
    # resignation, and a lead that counts a multiple of 5 scores at once (SB-5)
    you, opponent = final["points"]
    assert f"Match over: Opponent won by resignation (You {you}, Opponent {opponent})" in out


def test_play_vs_friend_prints_the_join_command() -> None:
    async def body(address: str, client: Client) -> tuple[int, str]:
        return await run_cli(["play", "--address", address, "--vs", "friend"], "q\n")

    code, out = serve(body)
    assert code == 0, out
    join = re.search(r"Friend joins with: tablehall play --address \S+ --join ([0-9a-f]{16}) --token (\S+)", out)
    assert join, out
    assert "Match over: Friend won by resign" in out


def test_501_q_leaves_the_table_says_so_and_the_seat_can_come_back() -> None:
    """501♠ has no resignation: `q` says it leaves, the match stays in progress, and the printed line rejoins."""

    async def body(address: str, client: Client) -> tuple[str, dict[str, Any], int, str]:
        code, out = await run_cli(["play", "--address", address, "--game", "501", "--think", "0"], "q\n")
        assert code == 0, out
        back = re.search(
            r"Back to seat 0 \(You\): tablehall play --address \S+ --join ([0-9a-f]{16}) --token (\S+)", out
        )
        assert back, out
        _, view = await client.spectator(back.group(1)).view()
        rejoin = ["play", "--address", address, "--join", back.group(1), "--token", back.group(2)]
        again, rejoined = await run_cli(rejoin, "q\n")
        return out, view, again, rejoined

    out, view, again, rejoined = serve(body)
    assert "q (leave the table; the match goes on)" in out and "q (resign" not in out
    assert "It is not over: 501♠ has no resignation; the table waits for you." in out
    assert out.count("tablehall bot --address") == 2  # one line per bot seat, to let them play on
    assert "no move for an hour" in out
    assert view["status"] == "in_progress" and view["phase"] != "over"
    assert again == 0 and "Your cards" in rejoined and "Back to seat 0 (You)" in rejoined


def hands_by_round(record: dict[str, Any]) -> list[tuple[set[frozenset[int]], ...]]:
    """For each round: seat 0's dealt hand, seat 1's, the boneyard — tiles as pip sets."""

    def tiles(names: list[str]) -> set[frozenset[int]]:
        return {frozenset((int(t[0]), int(t[-1]))) for t in names}

    return [(tiles(r["hands"][0]), tiles(r["hands"][1]), tiles(r["boneyard"])) for r in record["rounds"]]


def shown_tiles(line: str) -> set[frozenset[int]]:
    return {frozenset((int(a), int(b))) for a, b in TILE.findall(line)}


def test_shared_device_never_shows_the_other_hand() -> None:
    async def body(address: str, client: Client) -> tuple[int, str, dict[str, Any]]:
        code, out = await run_cli(["play", "--address", address, "--shared-device", "--points", "30"], ones())
        match_id = re.search(r"Match ([0-9a-f]{16})", out)
        assert match_id, out
        return code, out, await client.record(match_id.group(1))

    code, out, record = serve(body)
    assert code == 0, out[-3000:]
    deals = hands_by_round(record)
    names = ["Player 1", "Player 2"]
    holder: int | None = None
    round_no = 0
    handovers = hands_checked = 0
    for line in out.splitlines():
        if m := re.match(r"Pass the device to (Player \d), then press Enter\.", line):
            holder = names.index(m.group(1))
            handovers += 1
        elif m := re.match(r"Spectacular Bid — round (\d+)", line):
            round_no = int(m.group(1))
        elif "Your hand:" in line:
            assert holder is not None, "a hand was shown before anyone took the device"
            dealt = deals[round_no - 1]
            mine, theirs, boneyard = dealt[holder], dealt[1 - holder], dealt[2]
            tiles = shown_tiles(line)
            assert tiles and tiles <= mine | boneyard, f"{names[holder]} holds the device but saw: {line}"
            assert not tiles & theirs, f"{names[1 - holder]}'s tiles shown to {names[holder]}: {line}"
            hands_checked += 1
        elif m := re.match(r" [▶ ] (Player \d) \(you\):", line):
            assert holder is not None and m.group(1) == names[holder]
    assert handovers >= 2 and hands_checked >= 2
    assert re.search(r"^Match over: Player \d won by ", out, re.M)
