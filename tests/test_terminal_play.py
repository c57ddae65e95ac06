"""`tablehall play` on a pseudo-terminal (pexpect) against a real gateway: whole Spectacular Bid matches against
a bot, their round summaries checked against the match's record, the clock ticking while nobody moves, the
rules pager, a guest's names and Ctrl-C."""

from __future__ import annotations

import asyncio
import fcntl
import os
import re
import struct
import subprocess
import sys
import termios
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pexpect
from pexpect.fdpexpect import fdspawn

from tablehall.bots import run_bot
from tablehall.client import Client
from tests.test_bots import serve
from tests.web_support import replayed_rounds

MOVES = re.compile(r"\x1b\[\d*[AK]")
"""Cursor up and erase line: the live status region being redrawn; a line break in the transcript."""
ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]|\x1b[()][0-9A-Za-z]|\x1b[=>]|\r")
PROMPT = r"your move — a number"
HOLD = r"any key to go on"
OVER = r"Match over: [^\n]*\n"


class Pty(fdspawn):
    """`tablehall ARGS` on a new pseudo-terminal (50 × 160) that is its controlling terminal (so Ctrl-C typed
    there interrupts it). Started with subprocess (no fork of this process, whose gRPC threads a forked copy
    could trip over), through `setsid -w -c`."""

    def __init__(self, *args: str) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
        env = {**os.environ, "TERM": "xterm", "NO_COLOR": "1"}
        command = ["setsid", "-w", "-c", sys.executable, "-m", "tablehall.cli", *args]
        self.process = subprocess.Popen(command, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        super().__init__(master, encoding="utf-8", timeout=60)

    def sendintr(self) -> None:
        self.send("\x03")

    def finish(self) -> int:
        """Waits for the end of its output and of the process; its exit code."""
        self.expect(pexpect.EOF)
        code = self.process.wait(timeout=30)
        self.close()
        return code


def spawn(*args: str) -> Pty:
    return Pty(*args)


def plain(text: str) -> str:
    """The lines the table printed: escape codes gone, the status region's redraws (clock, prompt) left out."""
    lines = ANSI.sub("", MOVES.sub("\n", text)).split("\n")
    return "".join(f"{line}\n" for line in lines if line.strip() and not status_line(line))


def status_line(line: str) -> bool:
    return "▌" in line or line.startswith(("Clocks", "Time to decide"))


@dataclass
class Transcript:
    """What a terminal showed, as raw parts (one per expect); `text` is the table's lines."""

    parts: list[str] = field(default_factory=list)

    def add(self, child: Pty) -> str:
        after = child.after if isinstance(child.after, str) else ""
        self.parts.append(child.before + after)
        return plain(self.parts[-1])

    @property
    def text(self) -> str:
        return plain("".join(self.parts))


MENU = re.compile(r"(?:\n|\x1b\[2K)  1\. [^\n]*\n.*?" + PROMPT, re.S)
"""A menu printed, then the prompt: a line typed now answers that menu (the prompt alone is redrawn every tick)."""
BOARD = r"Spectacular Bid — round|501♠ — hand"


def play_to_the_end(child: Pty, answer: Callable[[str, str], str], steps: int = 3000) -> Transcript:
    """Answers every menu with `answer(the lines shown since the last one, the same with escape codes and status
    redraws)`, presses a key at every held summary, until the result."""
    seen = Transcript()
    for _ in range(steps):
        index = child.expect([MENU, HOLD, OVER])
        shown = seen.add(child)
        if index == 0:
            child.send(answer(shown, seen.parts[-1]) + "\r")
        elif index == 1:
            child.send(" ")
            if child.expect([BOARD, OVER]) == 1:
                seen.add(child)
                return seen
            seen.add(child)
        else:
            return seen
    raise AssertionError("the match did not end")


def last_menu(text: str) -> list[str]:
    """The numbered items of the last menu shown."""
    block = text[text.rfind("\n  1. ") :]
    return re.findall(r"^  \d+\. (.*)$", block, re.M)


def match_id(text: str) -> str:
    found = re.search(r"Match ([0-9a-f]{16})", text)
    assert found, text[:2000]
    return found.group(1)


# --- the record, replayed round by round ------------------------------------------------------------


@dataclass
class RoundEnd:
    points: tuple[int, int]
    end: str
    sums: tuple[int, int] | None


def sb_rounds(record: dict[str, Any]) -> list[RoundEnd]:
    """Each round of a Spectacular Bid record, the one that ended the match included: the points after it,
    how it ended, a block's hand sums (the page's tests replay records the same way)."""
    return [
        RoundEnd(tuple(r["points_after"]), r["end"], tuple(r["block"]["sums"]) if "block" in r else None)  # type: ignore[arg-type]
        for r in replayed_rounds(record)
    ]


def summaries(text: str, word: str = "Round") -> list[str]:
    """Each summary block: its "Round N over" line and the indented lines under it."""
    return re.findall(rf"^{word} \d+ over — .*\n(?:  .*\n)*", text, re.M)


def check_sb_summaries(text: str, record: dict[str, Any], names: list[str]) -> int:
    rounds = sb_rounds(record)
    told = summaries(text)
    for block in told:
        number = int(re.match(r"Round (\d+)", block).group(1))  # type: ignore[union-attr]
        truth = rounds[number - 1]
        after = re.search(r"Points after round \d+: (.*)", block)
        assert after, block
        shown = [int(p) for p in re.findall(r" (\d+) \([+−±]", after.group(1))]
        assert tuple(shown) == truth.points, (block, truth)
        assert ("domino" in block.splitlines()[0]) == (truth.end == "domino"), block
        if truth.end == "block":
            sums = [int(s) for s in re.findall(r"= (\d+)", block)]
            assert tuple(sums) == truth.sums, (block, truth)
        for name in names:
            assert name in block
    auctions = [r["auction"] for r in record_outcome(record)["rounds"]]
    for block, auction in zip(told, auctions, strict=False):
        if isinstance(auction, dict):
            assert f"for {auction['bid']}, paid {auction['paid']}" in block, block
        elif auction == "declined":
            assert "Auction: declined" in block, block
    return len(told)


def record_outcome(record: dict[str, Any]) -> dict[str, Any]:
    from workers.games.records import replay

    return replay(record).outcome


# --- the tests ----------------------------------------------------------------------------------------


def test_a_whole_spectacular_bid_match_with_its_summaries_and_a_ticking_clock() -> None:
    async def body(address: str, client: Client) -> tuple[str, dict[str, Any], list[str]]:
        def run() -> tuple[Transcript, list[str]]:
            child = spawn("play", "--address", address, "--think", "0", "--points", "100")
            clocks: list[str] = []

            def answer(shown: str, raw: str) -> str:
                if not clocks and "◀" in raw.rsplit("Clocks", 1)[-1]:
                    clocks.extend(ticking(child))  # the player thinks: the running clock is redrawn meanwhile
                return "1"

            seen = play_to_the_end(child, answer)
            code = child.finish()
            seen.add(child)
            assert code == 0, seen.text[-3000:]
            return seen, clocks

        seen, clocks = await asyncio.to_thread(run)
        record = await client.record(match_id(seen.text))
        return seen.text, record, clocks

    text, record, clocks = serve(body, timeout=600)
    assert len(set(clocks)) > 1, clocks  # the status line was redrawn with another reading
    assert "Back to your seat later (the match goes on without you): tablehall play" in text
    assert re.search(r"^Match over: (You|Bot) won by \w+ \(You \d+, Bot \d+\)$", text, re.M), text[-2000:]
    told = check_sb_summaries(text, record, ["You", "Bot"])
    rounds = len(record_outcome(record)["rounds"])
    assert told == rounds  # every round, the one that ended the match included (the view's final_round)
    assert not re.search(r"\b1 tiles|You bids|You takes|You plays", text)


def ticking(child: Pty, readings: int = 40) -> list[str]:
    """The running clock as the status line shows it, redraw after redraw, until it reads differently."""
    seen: list[str] = []
    while len(seen) < readings and len(set(seen)) < 2:
        child.expect(r"Clocks: [^\n]*◀[^\n]*\n")
        seen.append(ANSI.sub("", child.after).strip())
    return seen


def test_the_ready_screen_is_printed_once() -> None:
    async def body(address: str, client: Client) -> str:
        def run() -> str:
            child = spawn("play", "--address", address, "--think", "0")
            child.expect(PROMPT)
            first = child.before
            child.send("q\r")
            child.finish()
            return plain(first + child.before)

        return await asyncio.to_thread(run)

    text = serve(body)
    assert text.count("1. Continue (ready to start the clocks)") == 1, text
    assert text.count("Spectacular Bid — round 1, ready") == 1, text


def test_a_guest_sees_names_reads_the_rules_and_comes_back_to_the_board() -> None:
    async def body(address: str, client: Client) -> tuple[str, dict[str, Any]]:
        match = await client.create_match("spectacular-bid", ["Ana", "Bia"])
        args = [
            "play",
            "--address",
            address,
            "--join",
            match.match_id,
            "--token",
            match.tokens[1],
            "--names",
            "Ana,Bia",
        ]

        def run() -> str:
            child = spawn(*args)
            seen = Transcript()
            child.expect(PROMPT)
            seen.add(child)
            child.send("r\r")
            child.expect(r"Rules 1/(\d+)")
            pages = int(child.match.group(1))
            seen.add(child)
            for page in range(2, pages + 1):
                child.send(" ")
                child.expect(rf"Rules {page}/{pages}")
                seen.add(child)
            assert pages > 1
            child.send("q")
            child.expect(r"Spectacular Bid — round \d+")
            seen.add(child)
            child.expect(r"q \(resign\)")
            child.send("q\r")
            child.finish()
            seen.add(child)
            return seen.text

        bot = asyncio.create_task(run_bot(address, match.match_id, match.tokens[0], greedy=True, think_s=0))
        text = await asyncio.to_thread(run)
        return text, await bot

    text, final = serve(body)
    assert "Bia (you): " in text and "seat 0" not in text and "seat 1" not in text
    assert "SB-10" in text  # the rules, as the service sends them, in the pager
    assert final["winner"] == 0 and final["reason"] == "resign"
    assert re.search(r"^Match over: Ana won by resignation \(Ana \d+, Bia \(you\) \d+\)$", text, re.M), text[-1500:]


def test_ctrl_c_says_the_match_goes_on_and_how_to_come_back() -> None:
    async def body(address: str, client: Client) -> tuple[str, int | None, dict[str, Any]]:
        def run() -> tuple[str, int | None]:
            child = spawn("play", "--address", address, "--think", "0")
            child.expect(PROMPT)
            before = child.before
            child.sendintr()
            code = child.finish()
            return plain(before + child.before), code

        text, code = await asyncio.to_thread(run)
        _, view = await client.spectator(match_id(text)).view()
        return text, code, view

    text, code, view = serve(body)
    assert code == 130
    assert "Interrupted: you left match" in text and "it goes on without you" in text
    assert "Your clock runs whenever it is your move" in text
    assert re.search(r"Back to seat 0 \(You\): tablehall play --address \S+ --join [0-9a-f]{16} --token \S+", text)
    assert view["status"] == "in_progress"
