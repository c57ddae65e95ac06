"""`tablehall play`: play a match from the terminal, against bots, a friend, or on one shared device.

After every update the screen shows the player's view and a numbered list of what they may do now;
they type a number (501♠ also takes `bid N` and `declare TRUMP TARGET CARD CARD`), `r` for the rules
(fetched from the service; nothing pauses) or `q` to resign (Spectacular Bid) or leave the table (501♠, which
has no resignation: the match goes on, and the screen says how to come back). Lines are read by a thread, so
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
from tablehall.client import Client, SeatClient, ServiceUnreachable, TablehallError, Tls
from tablehall.menu import RESIGN, BadInput, Item, menu, parse, quit_words
from tablehall.render import MatchTime, clock_line, result_line, seat_name, view_lines
from workers.games.catalog import FIVE_OH_ONE, SPECTACULAR_BID, fewest_seats

View = dict[str, Any]
SB = SPECTACULAR_BID


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
            self.print(f"{seat_name(self.names, seat)}, your move — a number, r (rules), q ({quit_words(view)}):")
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
            if RESIGN in view.get("legal", []) and await self._act(seat, RESIGN):
                return True  # the match is over: its result is shown
            raise Quit(view)
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
    """Exit 0 when the match ended or the player left; 1 when the service was lost during the match; 2 when
    it could not start (no service at `address`, or a match, id, token or option the service refused)."""
    console = console or Console(highlight=False, soft_wrap=True)
    keyboard = Keyboard()
    async with Client(address, tls) as client:
        try:
            await client.reachable()
            if join is not None:
                table = await _join(client, join, token)
            else:
                table = await _create(client, game, vs, shared, players or fewest_seats(game), name, options)
        except (ServiceUnreachable, TablehallError, CannotStart) as error:
            print(f"tablehall play: {_said(error)}", file=sys.stderr)
            return 2
        if join is None:
            _introduce(console, address, game, vs, shared, table)
        robots = [
            asyncio.create_task(bots.run_bot(address, table.match_id, t, greedy=True, think_s=think_s, client=client))
            for t in table.bot_tokens.values()
        ]
        session = Session(client, table.match_id, table.seats, table.names, keyboard, console, shared=shared)
        if table.clock_origin is not None:
            session.clock = MatchTime(table.clock_origin)
        quit = False
        try:
            await session.run()
        except Quit as left:
            quit = True
            for line in leave_lines(address, table, left.view):
                session.print(line)
        except (TablehallError, ConnectionError) as error:
            print(f"tablehall play: {_said(error)}", file=sys.stderr)
            return 1
        finally:
            if robots and not quit:
                await asyncio.wait(robots, timeout=5)
            for robot in robots:
                robot.cancel()
    return 0


def _said(error: Exception) -> str:
    return error.line() if isinstance(error, TablehallError) else str(error)


class CannotStart(Exception):
    """What the command line gave cannot start a match (exit 2)."""


@dataclass(frozen=True, slots=True)
class Table:
    """The seats this terminal plays and the bots it runs, once the match exists."""

    match_id: str
    seats: dict[int, SeatClient]
    tokens: dict[int, str]
    """Every seat token known here (all of a match created here; the joined seat's): what rejoins it."""
    names: list[str]
    bot_tokens: dict[int, str]
    clock_origin: float | None = None


async def _join(client: Client, match_id: str, token: str | None) -> Table:
    if not token:
        raise CannotStart("--join needs --token (the seat's token)")
    seat = client.seat(match_id, token)
    try:
        _, view = await seat.view()
    except TablehallError as error:
        raise CannotStart(f"cannot join match {match_id[:40]}: {error.line()}") from None
    names = [f"seat {i}" for i in range(len(view.get("scores") or view.get("points") or []))]
    return Table(match_id, {int(view["seat"]): seat}, {int(view["seat"]): token}, names, {})


async def _create(
    client: Client, game: str, vs: str, shared: bool, count: int, name: str, options: Mapping[str, Any] | None
) -> Table:
    names = _names(name, count, vs, shared)
    clock_origin = MatchTime.local_ms()
    try:
        created = await client.create_match(game, names, options, shared_device=shared and game == SB)
    except TablehallError as error:
        raise CannotStart(f"cannot create the match: {error.line()}") from None
    humans = range(count) if shared else range(1)
    seats = {i: client.seat(created.match_id, created.tokens[i]) for i in humans}
    robots = range(1, count) if vs == "bot" and not shared else range(0)
    bot_tokens = {i: created.tokens[i] for i in robots}
    return Table(created.match_id, seats, dict(enumerate(created.tokens)), names, bot_tokens, clock_origin)


def _introduce(console: Console, address: str, game: str, vs: str, shared: bool, table: Table) -> None:
    console.print(f"Match {table.match_id} ({game}) on {address}: " + ", ".join(table.names), markup=False)
    if vs == "friend" and not shared:
        for seat in range(1, len(table.names)):
            console.print(
                f"  {table.names[seat]} joins with: tablehall play --address {address} "
                f"--join {table.match_id} --token {table.tokens.get(seat, '')}",
                markup=False,
            )


def leave_lines(address: str, table: Table, view: View) -> list[str]:
    """What leaving a match that goes on means for the table, and how to come back (501♠'s `q`)."""
    join = f"tablehall play --address {address} --join {table.match_id} --token"
    why = ": 501♠ has no resignation" if view.get("game") == FIVE_OH_ONE else ""
    lines = [f"You left match {table.match_id}. It is not over{why}; the table waits for you."]
    lines += [
        f"  Back to seat {seat} ({table.names[seat]}): {join} {table.tokens[seat]}" for seat in sorted(table.seats)
    ]
    if table.bot_tokens:
        lines.append("  The bots stopped with this terminal; each plays on with:")
        lines += [f"    tablehall bot --address {address} --match {table.match_id} --token {token}"
                  for token in table.bot_tokens.values()]  # fmt: skip
    if view.get("limit_ms"):
        lines.append("  Nobody back in time: a seat whose decision limit runs out loses the game.")
    else:
        lines.append("  Nobody back: the service voids a table with no move for an hour (abandoned, never rated).")
    return lines


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
