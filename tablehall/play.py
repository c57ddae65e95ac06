"""`tablehall play`: play a match from the terminal, against bots, a friend, or on one shared device.

After every update the screen shows the player's view and a numbered list of what they may do now;
they type a number (501♠ also takes `bid N` and `declare TRUMP TARGET CARD CARD`), `r` for the rules
(fetched from the service; nothing pauses) or `q` to resign and quit. Lines are read by a thread, so
updates keep arriving while the player thinks, and input may come from a pipe.

On a shared device every seat is played here: between turns a hand-over screen asks to pass the device,
and no hand is shown until the next player presses Enter (Spectacular Bid then sends `reveal`, which
starts that player's clock). The screen never shows a seat's hand while another seat holds the device.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown

from tablehall import bots
from tablehall.client import Client, SeatClient, TablehallError, Tls
from tablehall.menu import BadInput, Item, menu, parse
from tablehall.render import MatchTime, clock_line, result_line, seat_name, view_lines

View = dict[str, Any]
SB = "spectacular-bid"


class Keyboard:
    """Lines typed (or piped) on stdin, read by a daemon thread; None marks the end of input."""

    def __init__(self, stream: Any = None) -> None:
        self.loop = asyncio.get_running_loop()
        self.lines: deque[str | None] = deque()
        self.arrived = asyncio.Event()
        self.stream = stream if stream is not None else sys.stdin
        threading.Thread(target=self._read, name="tablehall-keyboard", daemon=True).start()

    def _read(self) -> None:
        for line in iter(self.stream.readline, ""):
            self._post(line.rstrip("\r\n"))
        self._post(None)

    def _post(self, line: str | None) -> None:
        with contextlib.suppress(RuntimeError):  # the event loop has closed: nobody listens any more
            self.loop.call_soon_threadsafe(self._push, line)

    def _push(self, line: str | None) -> None:
        self.lines.append(line)
        self.arrived.set()

    def head(self) -> str | None:
        return self.lines[0] if self.lines else ""

    def pop(self) -> str | None:
        line = self.lines[0]
        if line is not None:  # the end of input stays: every later read sees it too
            self.lines.popleft()
        if not self.lines:
            self.arrived.clear()
        return line


class Feed:
    """The latest view of one seat, kept current from its stream; a dropped stream resumes after its seq."""

    def __init__(self, seat: SeatClient, seq: int, view: View) -> None:
        self.seat = seat
        self.seq = seq
        self.view = view
        self.changed = asyncio.Event()
        self.error: str | None = None

    def offer(self, seq: int, view: View) -> None:
        if seq > self.seq:
            self.seq, self.view = seq, view
            self.changed.set()

    def fail(self, message: str) -> None:
        self.error = message
        self.changed.set()

    async def run(self) -> None:
        failures = 0
        while not bots.is_over(self.view):
            try:
                async for seq, view in self.seat.watch(after_seq=self.seq):
                    failures = 0
                    self.offer(seq, view)
            except TablehallError as error:
                if error.status not in bots.RETRYABLE or failures > 20:
                    self.fail(f"lost the match's stream: {error}")
                    return
            failures += 1
            await asyncio.sleep(min(0.05 * 2**failures, 1.0))


class Quit(Exception):
    """The player left without a result to show (501♠ has no resignation)."""


@dataclass
class Session:
    """The humans' seats of one match, on this terminal."""

    client: Client
    match_id: str
    seats: dict[int, SeatClient]
    names: list[str]
    keyboard: Keyboard
    console: Console
    shared: bool = False
    clock: MatchTime = field(default_factory=MatchTime)
    holder: int | None = None
    """Shared device: the seat holding it (its hand may be shown)."""
    after: int = 0
    last_screen: list[str] = field(default_factory=list)
    """The seq of our last accepted command: nothing older is drawn again."""

    async def run(self) -> View:
        first = min(self.seats)
        seq, view = await self.seats[first].view()
        feed = Feed(self.seats[first], seq, view)
        watcher = asyncio.create_task(feed.run())
        try:
            return await self._loop(feed)
        finally:
            watcher.cancel()

    async def _loop(self, feed: Feed) -> View:
        while True:
            feed.changed.clear()
            if feed.error:
                raise ConnectionError(feed.error)
            if feed.seq < self.after:
                await feed.changed.wait()
                continue
            view = feed.view
            self.clock.observe(view)
            if bots.is_over(view):
                self.print(*view_lines(view, self.names, self.clock.now(), show_hand=False))
                self.print(result_line(view, self.names), style="bold")
                return view
            turn = view.get("turn")
            if self.shared and view.get("game") == SB and view["phase"] == "ready":
                await self._ready_screen(feed, view)
            elif self.shared and turn is not None and (view.get("hand_over") or self.holder != turn):
                await self._hand_over(feed, view, turn)
            else:
                shown = (turn if turn is not None else self.holder) if self.shared else first_of(self.seats)
                await self._turn(feed, shown)

    async def _turn(self, feed: Feed, seat: int | None) -> None:
        """Show `seat`'s view (a public one if None) and take one command, unless the match moves first."""
        if seat is None:
            self.print(*view_lines(feed.view, self.names, self.clock.now(), show_hand=False))
            await self._wait(feed, keys=False, tick=True)
            return
        _, view = await self.seats[seat].view() if self.shared else (feed.seq, feed.view)
        self.clock.observe(view)
        screen = view_lines(view, self.names, self.clock.now())
        items = menu(view, self.names)
        if items or screen != self.last_screen:  # a change another seat cannot see is not redrawn
            self.print("", *screen)
        self.last_screen = screen
        if items:
            self.print(*(f"  {i}. {item.label}" for i, item in enumerate(items, 1)))
            self.print(f"{seat_name(self.names, seat)}, your move — a number, r (rules), q (resign and quit):")
        while True:
            # without a menu only q and r are taken now; other lines wait for the next prompt
            keys = bool(items) or self.keyboard.head() in ("", "q", "r")
            if not await self._wait(feed, keys, tick=not items):
                return  # the match moved on: redraw
            if not items and self.keyboard.head() not in ("q", "r"):
                continue
            if await self._command(self._line(), items, view, seat):
                return

    async def _command(self, line: str | None, items: Sequence[Item], view: View, seat: int) -> bool:
        """Handle one typed line; True when the screen should be redrawn."""
        text = "q" if line is None else line.strip()
        if line is None:
            self.print("(end of input)")
        if text.lower() == "q":
            if {"do": "resign"} in view.get("legal", []) and await self._act(seat, {"do": "resign"}):
                return True  # the match is over: its result is shown
            self.print("Leaving the table.")
            raise Quit()
        if text.lower() == "r":
            self.console.print(Markdown(await self.client.rules(view.get("game", SB))))
            return False
        if not items:
            self.print("Nothing to do yet: waiting for the other players.")
            return False
        try:
            action = parse(text, items, view)
        except BadInput as error:
            self.print(str(error), style="red")
            return False
        return await self._act(seat, action)

    async def _act(self, seat: int, action: Mapping[str, Any]) -> bool:
        try:
            seq, _ = await self.seats[seat].act(action)
        except TablehallError as error:
            self.print(f"refused: {error}", style="red")
            return error.code == "illegal_action"  # the state may have moved on: show it again
        self.after = max(self.after, seq)
        return True

    async def _ready_screen(self, feed: Feed, view: View) -> None:
        self.clear()
        self.print(*view_lines(view, self.names, self.clock.now(), show_hand=False))
        self.print(f"Round {view['round']} is dealt. Press Enter to start the clocks.")
        if not await self._wait(feed, keys=True):
            return
        line = self._line()
        if line is None or line.strip().lower() == "q":
            await self._command(line, [], view, self.holder if self.holder is not None else first_of(self.seats))
            return
        for seat, client in self.seats.items():
            _, mine = await client.view()
            if {"do": "ready"} in mine.get("legal", []):
                await self._act(seat, {"do": "ready"})

    async def _hand_over(self, feed: Feed, view: View, turn: int) -> None:
        self.clear()
        name = seat_name(self.names, turn)
        self.print("", "=" * 60, f"Pass the device to {name}, then press Enter.", "=" * 60)
        if not await self._wait(feed, keys=True):
            return
        line = self._line()
        self.holder = turn
        if line is None or line.strip().lower() == "q":
            await self._command(line, [], view, turn)
            return
        if view.get("hand_over"):
            await self._act(turn, {"do": "reveal"})

    async def _wait(self, feed: Feed, keys: bool, tick: bool = False) -> bool:
        """Until a typed line is queued (True; `keys` only) or the match changes (False). With `tick`
        (no prompt open, so nothing is being typed) a running clock counts down on a terminal."""
        if keys and self.keyboard.lines:
            return True
        waits: set[asyncio.Future[Any]] = {asyncio.ensure_future(feed.changed.wait())}
        if keys:
            waits.add(asyncio.ensure_future(self.keyboard.arrived.wait()))
        live = self._ticker(feed.view) if tick else None
        try:
            if live is not None:
                with live:
                    while not (await asyncio.wait(waits, timeout=0.2))[0]:
                        live.update(clock_line(feed.view, self.names, self.clock.now()), refresh=True)
            else:
                await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        return keys and bool(self.keyboard.lines)

    def _line(self) -> str | None:
        """Take the queued line (None: the input has ended), echoed when it came from a pipe."""
        line = self.keyboard.pop()
        if line is not None and not self.console.is_terminal:
            self.print(f"> {line}")
        return line

    def _ticker(self, view: View) -> Live | None:
        """On a real terminal, the running clocks tick while we wait (Spectacular Bid)."""
        if not self.console.is_terminal or view.get("game") != SB or view.get("clock_running") is None:
            return None
        return Live("", console=self.console, transient=True, auto_refresh=False)

    def print(self, *lines: str, style: str | None = None) -> None:
        for line in lines:
            self.console.print(line, style=style, markup=False, highlight=False)

    def clear(self) -> None:
        if self.console.is_terminal:
            self.console.clear()


def first_of(seats: Mapping[int, SeatClient]) -> int:
    return min(seats)


async def run_play(
    address: str,
    game: str,
    vs: str,
    *,
    join: str | None = None,
    token: str | None = None,
    shared: bool = False,
    players: int | None = None,
    name: str = "You",
    think_s: float = 0.5,
    options: Mapping[str, Any] | None = None,
    console: Console | None = None,
    tls: Tls | None = None,
) -> int:
    console = console or Console(highlight=False, soft_wrap=True)
    keyboard = Keyboard()
    async with Client(address, tls) as client:
        count = players or (2 if game == SB else 3)
        if join is not None:
            if not token:
                console.print("tablehall play: --join needs --token", markup=False)
                return 2
            seats = {-1: client.seat(join, token)}
            _, view = await seats[-1].view()
            seats = {int(view["seat"]): seats[-1]}
            names = [f"seat {i}" for i in range(len(view.get("scores") or view.get("points") or []))]
            match_id = join
            bot_tokens: list[str] = []
        else:
            names = _names(name, count, vs, shared)
            clock_origin = MatchTime.local_ms()
            created = await client.create_match(game, names, options, shared_device=shared and game == SB)
            match_id = created.match_id
            humans = range(count) if shared else range(1)
            seats = {i: client.seat(match_id, created.tokens[i]) for i in humans}
            bot_tokens = list(created.tokens[1:]) if vs == "bot" and not shared else []
            console.print(f"Match {match_id} ({game}) on {address}: " + ", ".join(names), markup=False)
            if vs == "friend" and not shared:
                for seat in range(1, count):
                    console.print(
                        f"  {names[seat]} joins with: tablehall play --address {address}{' --tls' if tls else ''} "
                        f"--join {match_id} --token {created.tokens[seat]}",
                        markup=False,
                    )
        robots = [
            asyncio.create_task(bots.run_bot(address, match_id, t, greedy=True, think_s=think_s, client=client))
            for t in bot_tokens
        ]
        session = Session(client, match_id, seats, names, keyboard, console, shared=shared)
        if join is None:
            session.clock = MatchTime(clock_origin)
        quit = False
        try:
            await session.run()
        except Quit:
            quit = True
        except (TablehallError, ConnectionError) as error:
            console.print(f"tablehall play: {error}", markup=False)
            return 1
        finally:
            if robots and not quit:
                await asyncio.wait(robots, timeout=5)
            for robot in robots:
                robot.cancel()
    return 0


def _names(name: str, count: int, vs: str, shared: bool) -> list[str]:
    if shared:
        return [f"Player {i + 1}" for i in range(count)]
    others = "Bot" if vs == "bot" else "Friend"
    if count == 2:
        return [name, others]
    return [name, *(f"{others} {i}" for i in range(1, count))]


def play_options(game: str, points: int | None, bank_s: float | None, start_score: int | None) -> dict[str, Any]:
    """Match options from the command line, for the game that takes them."""
    if game == SB:
        chosen: dict[str, Any] = {"start_points": points, "bank_s": bank_s}
    else:
        chosen = {"start_score": start_score}
    return {key: value for key, value in chosen.items() if value is not None}
