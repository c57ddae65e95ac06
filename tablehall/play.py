"""`tablehall play`: play a match from the terminal, against bots, a friend, or on one shared device.

The table's story scrolls: each move in the table's words (`tablehall/summaries.py`), the board whenever it
changes, a numbered list of what the player may do now. At the bottom of a terminal a status region ticks:
both clocks (the one on move counting down, tenths under ten seconds, a warning when low) and the prompt with
what is being typed (`tablehall/terminal.py`). The player types a number (501♠ also takes `bid 85`,
`declare H 100 J♠ 9♦` and a card as shown, `10♣`), `r` for the rules (a pager; `q` returns to the table;
nothing pauses) or `q` to resign (Spectacular Bid) or leave the table (501♠, which has no resignation: the
match goes on, and the screen says how to come back). A round's or a hand's summary is held until a key is
pressed or a few seconds pass. Ctrl-C leaves the match running and says how to come back. Input may come from
a pipe (then nothing ticks or waits, and each line read is echoed).

On a shared device every seat is played here: between turns a hand-over screen asks to pass the device,
and no hand is shown until the next player presses Enter (Spectacular Bid then sends `reveal`, which
starts that player's clock). The screen never shows a seat's hand while another seat holds the device.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console

from tablehall import bots
from tablehall.client import Client, SeatClient, ServiceUnreachable, TablehallError, Tls
from tablehall.menu import RESIGN, BadInput, Item, menu, parse, quit_words
from tablehall.render import MatchTime, clock_line, is_low, seat_name, view_lines
from tablehall.seating import CannotStart, Table, create, first_of, introduce, leave_lines, play_options
from tablehall.seating import join as join_table
from tablehall.summaries import Narrator
from tablehall.terminal import Keyboard, Screen
from workers.games.catalog import SPECTACULAR_BID

View = dict[str, Any]
SB = SPECTACULAR_BID
__all__ = ["play_options", "run_play"]


class Feed:
    """One seat's views from its stream, in order: every one is told (`fresh`), the newest is drawn."""

    def __init__(self, seat: SeatClient, seq: int, view: View) -> None:
        self.seat = seat
        self.seq = seq
        self.view = view
        self.fresh: deque[View] = deque([view])
        self.changed = asyncio.Event()
        self.error: str | None = None

    def offer(self, seq: int, view: View) -> None:
        if seq > self.seq:
            self.seq, self.view = seq, view
            self.fresh.append(view)
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
    """The player left a match that goes on (501♠ has no resignation); `view` is the last one seen."""

    def __init__(self, view: View) -> None:
        super().__init__("left the table")
        self.view = view


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
    """The seq of our last accepted command: nothing older is drawn again."""
    shown: tuple[list[str], list[Item]] = ([], [])
    view: View = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.me = None if self.shared else first_of(self.seats)
        self.narrator = Narrator(self.names, self.me)
        self.screen = Screen(self.console, self.keyboard, self.status)

    def status(self) -> tuple[str, bool]:
        """The clock line under the table, as it reads now."""
        if not self.view:
            return "", False
        now = self.clock.now()
        return clock_line(self.view, self.names, now, self.me), is_low(self.view, now)

    async def run(self) -> View:
        first = first_of(self.seats)
        seq, view = await self.seats[first].view()
        feed = Feed(self.seats[first], seq, view)
        watcher = asyncio.create_task(feed.run())
        self.screen.start()
        try:
            return await self._loop(feed)
        finally:
            watcher.cancel()
            self.screen.stop()

    async def _loop(self, feed: Feed) -> View:
        while True:
            feed.changed.clear()
            if feed.error:
                raise ConnectionError(feed.error)
            await self._tell(feed)
            if feed.seq < self.after:
                await feed.changed.wait()
                continue
            view = self.view = feed.view
            self.clock.observe(view)
            if bots.is_over(view):
                return view
            turn = view.get("turn")
            if self.shared and view.get("game") == SB and view["phase"] == "ready":
                await self._ready_screen(feed, view)
            elif self.shared and turn is not None and (view.get("hand_over") or self.holder != turn):
                await self._hand_over(feed, view, turn)
            else:
                shown = (turn if turn is not None else self.holder) if self.shared else self.me
                await self._turn(feed, shown)

    async def _tell(self, feed: Feed) -> None:
        """Every view not yet told: its moves, and a round's or hand's summary (held on screen)."""
        while feed.fresh:
            view = feed.fresh.popleft()
            self.view = view
            told = self.narrator.see(view)
            self.screen.print(*told.lines)
            if told.summary and bots.is_over(view):
                self.screen.print("", *told.summary, style="bold")
            elif told.summary:
                await self.screen.hold(told.summary)
                self.shown = ([], [])  # the board again below the summary

    async def _turn(self, feed: Feed, seat: int | None) -> None:
        """Show `seat`'s view (a public one if None) and take one command, unless the match moves first."""
        _, view = await self.seats[seat].view() if self.shared and seat is not None else (feed.seq, feed.view)
        self.clock.observe(view)
        board = view_lines(view, self.names, show_hand=seat is not None)
        items = menu(view, self.names) if seat is not None else []
        # the board when there is a decision to take (or nobody's hand to show); the others' moves are told
        if (board, items) != self.shown and (items or seat is None):
            self.screen.print("", *board)
            if not self.screen.ticking and (line := self.status()[0]):
                self.screen.print(line)
            self.screen.print(*(f"  {i}. {item.label}" for i, item in enumerate(items, 1)))
            self.shown = (board, items)
        if items or self.screen.ticking:
            self.screen.ask(self._prompt(view, seat, items))
        while True:
            # without a menu only q and r are taken now; on a pipe, other lines wait for the next prompt
            keys = bool(items) or self.screen.ticking or self.keyboard.head() in ("", "q", "r")
            if not await self._wait(feed, keys):
                return  # the match moved on: redraw
            if not items and self.keyboard.head() not in ("q", "r", None) and not self.screen.ticking:
                continue
            if seat is None:
                seat = self.holder if self.holder is not None else first_of(self.seats)
            if await self._command(self._line(), items, view, seat):
                return

    def _prompt(self, view: View, seat: int | None, items: Sequence[Item]) -> str:
        keys = f"r (rules), q ({quit_words(view)})"
        if items:
            return f"{seat_name(self.names, seat)}, your move — a number, {keys}:"
        turn = view.get("turn")
        waiting = f"Waiting for {seat_name(self.names, turn, self.me)}" if turn is not None else "Waiting"
        return f"{waiting} — {keys}"

    async def _command(self, line: str | None, items: Sequence[Item], view: View, seat: int) -> bool:
        """Handle one typed line; True when the screen should be redrawn."""
        text = "q" if line is None else line.strip()
        if line is None:
            self.screen.print("(end of input)")
        if text.lower() == "q":
            if RESIGN in view.get("legal", []) and await self._act(seat, RESIGN):
                return True  # the match is over: its result is shown
            raise Quit(view)
        if text.lower() == "r":
            await self.screen.page(await self.client.rules(view.get("game", SB)))
            self.shown = ([], [])
            return True
        if not items:
            self.screen.print("Nothing to do yet: waiting for the other players.")
            return False
        try:
            action = parse(text, items, view)
        except BadInput as error:
            self.screen.print(str(error), style="red")
            return False
        return await self._act(seat, action)

    async def _act(self, seat: int, action: Mapping[str, Any]) -> bool:
        try:
            seq, _ = await self.seats[seat].act(action)
        except TablehallError as error:
            self.screen.print(f"refused: {error}", style="red")
            return error.code == "illegal_action"  # the state may have moved on: show it again
        self.after = max(self.after, seq)
        return True

    async def _ready_screen(self, feed: Feed, view: View) -> None:
        self.screen.clear()
        self.screen.print(*view_lines(view, self.names, show_hand=False))
        self.screen.ask(f"Round {view['round']} is dealt. Press Enter to start the clocks.")
        if not await self._wait(feed, keys=True):
            return
        line = self._line()
        if line is None or line.strip().lower() in ("q", "r"):
            await self._command(line, [], view, self.holder if self.holder is not None else first_of(self.seats))
            return
        for seat, client in self.seats.items():
            _, mine = await client.view()
            if {"do": "ready"} in mine.get("legal", []):
                await self._act(seat, {"do": "ready"})

    async def _hand_over(self, feed: Feed, view: View, turn: int) -> None:
        self.screen.clear()
        self.shown = ([], [])
        name = seat_name(self.names, turn)
        self.screen.print("", "=" * 60)
        self.screen.ask(f"Pass the device to {name}, then press Enter.")
        self.screen.print("=" * 60)
        if not await self._wait(feed, keys=True):
            return
        line = self._line()
        self.holder = turn
        if line is None or line.strip().lower() in ("q", "r"):
            await self._command(line, [], view, turn)
            return
        if view.get("hand_over"):
            await self._act(turn, {"do": "reveal"})

    async def _wait(self, feed: Feed, keys: bool) -> bool:
        """Until a typed line is queued (True; `keys` only) or the match changes (False)."""
        if keys and self.keyboard.lines:
            return True
        waits: set[asyncio.Future[Any]] = {asyncio.ensure_future(feed.changed.wait())}
        if keys:
            waits.add(asyncio.ensure_future(self.keyboard.arrived.wait()))
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiting in waits:
                waiting.cancel()
        return keys and bool(self.keyboard.lines)

    def _line(self) -> str | None:
        """Take the queued line (None: the input has ended), echoed (a pipe shows nothing typed)."""
        line = self.keyboard.pop()
        if line is not None:
            self.screen.print(f"> {line}")
        return line


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
    names: str | None = None,
    think_s: float = 0.5,
    options: Mapping[str, Any] | None = None,
    console: Console | None = None,
    tls: Tls | None = None,
) -> int:
    """Exit 0 when the match ended or the player left; 1 when the service was lost during the match; 2 when
    it could not start (no service at `address`, or a match, id, token or option the service refused); 130
    on Ctrl-C (the match goes on)."""
    console = console or Console(highlight=False, soft_wrap=True)
    async with Client(address, tls) as client:
        try:
            await client.reachable()
            if join is not None:
                table = await join_table(client, join, token, name, names)
            else:
                count = players or (2 if game == SB else 3)
                table = await create(client, game, vs, shared, count, name, options)
        except (ServiceUnreachable, TablehallError, CannotStart) as error:
            print(f"tablehall play: {_said(error)}", file=sys.stderr)
            return 2
        if join is None:
            for line in introduce(address, game, vs, shared, table):
                console.print(line, markup=False, highlight=False)
        keyboard = Keyboard()
        try:
            return await _seated(address, client, table, keyboard, console, shared, think_s)
        finally:
            keyboard.restore()


async def _seated(
    address: str, client: Client, table: Table, keyboard: Keyboard, console: Console, shared: bool, think_s: float
) -> int:
    robots = [
        asyncio.create_task(bots.run_bot(address, table.match_id, t, greedy=True, think_s=think_s, client=client))
        for t in table.bot_tokens.values()
    ]
    session = Session(client, table.match_id, table.seats, table.names, keyboard, console, shared=shared)
    if table.clock_origin is not None:
        session.clock = MatchTime(table.clock_origin)
    interrupted = _on_interrupt()
    left = False
    try:
        await session.run()
    except Quit as quit:
        left = True
        session.screen.print(*leave_lines(address, table, quit.view))
    except (TablehallError, ConnectionError) as error:
        print(f"tablehall play: {_said(error)}", file=sys.stderr)
        return 1
    except asyncio.CancelledError:
        if not interrupted:
            raise
        left = True
        session.screen.print("", *leave_lines(address, table, session.view, interrupted=True))
        return 130
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError):
            asyncio.get_running_loop().remove_signal_handler(signal.SIGINT)
        if robots and not left:
            await asyncio.wait(robots, timeout=5)
        for robot in robots:
            robot.cancel()
    return 0


def _on_interrupt() -> list[bool]:
    """Ctrl-C cancels the session (which then says what happens to the match); the list is set when it did."""
    flag: list[bool] = []
    task = asyncio.current_task()

    def interrupt() -> None:
        flag.append(True)
        if task is not None:
            task.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError):
        asyncio.get_running_loop().add_signal_handler(signal.SIGINT, interrupt)
    return flag


def _said(error: Exception) -> str:
    return error.line() if isinstance(error, TablehallError) else str(error)
