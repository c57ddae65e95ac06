"""The terminal under `tablehall play`: keys typed, a live status line that ticks, a pager, held summaries.

On a real terminal the keyboard is read key by key (cbreak mode: no echo, Ctrl-C still interrupts) by a
thread, and the line being typed is drawn by us in the status region at the bottom of the screen (rich
Live), under the table's text: so the clock above the prompt can be redrawn ten times a second without
disturbing what the player types. Backspace and Ctrl-U edit the line, Enter sends it, Ctrl-D on an empty
line ends the input. Piped input is read line by line, echoed, and nothing ticks, pages or waits.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import sys
import threading
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

TICK_S = 0.1
"""How often the status region (the running clock) is redrawn."""
HOLD_S = 8.0
"""How long a round's or a hand's summary stays on screen unless a key is pressed."""


class Keyboard:
    """What is typed: whole lines (`lines`; None marks the end of input) and, on a terminal, single keys."""

    def __init__(self, stream: Any = None) -> None:
        self.loop = asyncio.get_running_loop()
        self.stream = stream if stream is not None else sys.stdin
        self.lines: deque[str | None] = deque()
        self.arrived = asyncio.Event()
        self.typed = asyncio.Event()
        self.buffer = ""
        self.grab: asyncio.Future[str | None] | None = None
        self._escape = 0
        self._saved: Any = None
        self.tty = self._cbreak()
        threading.Thread(target=self._read_keys if self.tty else self._read_lines, daemon=True).start()

    def _cbreak(self) -> bool:
        try:
            fd = self.stream.fileno()
            if not os.isatty(fd):
                return False
            import termios
            import tty

            self._saved = termios.tcgetattr(fd)
            tty.setcbreak(fd)
        except (AttributeError, OSError, ValueError, ImportError):
            return False
        atexit.register(self.restore)
        return True

    def restore(self) -> None:
        """Give the terminal back as it was (cooked mode, echo)."""
        if self._saved is not None:
            import termios

            with contextlib.suppress(OSError, ValueError):
                termios.tcsetattr(self.stream.fileno(), termios.TCSADRAIN, self._saved)
            self._saved = None

    def _read_lines(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed input is its end
            for line in iter(self.stream.readline, ""):
                self._post(self._push, line.rstrip("\r\n"))
        self._post(self._push, None)

    def _read_keys(self) -> None:
        with contextlib.suppress(OSError, ValueError):  # a hung-up terminal is the end of input
            fd = self.stream.fileno()
            while data := os.read(fd, 64):
                for key in data.decode(errors="ignore"):
                    self._post(self._key, key)
        self._post(self._push, None)

    def _post(self, handler: Callable[[Any], None], item: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the event loop has closed: nobody listens any more
            self.loop.call_soon_threadsafe(handler, item)

    def _push(self, line: str | None) -> None:
        self.lines.append(line)
        self.arrived.set()
        if line is None and self.grab is not None and not self.grab.done():
            self.grab.set_result(None)

    def _key(self, key: str) -> None:
        if self._skip_escape(key):
            return
        if self.grab is not None and not self.grab.done():
            self.grab.set_result(key)
            return
        if key in "\r\n":
            line, self.buffer = self.buffer, ""
            self._push(line)
        elif key in "\x7f\x08":
            self.buffer = self.buffer[:-1]
        elif key == "\x15":
            self.buffer = ""
        elif key == "\x04" and not self.buffer:
            self._push(None)
        elif key.isprintable():
            self.buffer += key
        self.typed.set()

    def _skip_escape(self, key: str) -> bool:
        """Arrow keys and the like (ESC [ … final byte) are ignored."""
        if key == "\x1b":
            self._escape = 1
            return True
        if self._escape == 1:
            self._escape = 2 if key in "[O" else 0
            return True
        if self._escape == 2:
            if "@" <= key <= "~":
                self._escape = 0
            return True
        return False

    def head(self) -> str | None:
        return self.lines[0] if self.lines else ""

    def pop(self) -> str | None:
        line = self.lines[0]
        if line is not None:  # the end of input stays: every later read sees it too
            self.lines.popleft()
        if not self.lines:
            self.arrived.clear()
        return line

    async def key(self, timeout: float | None) -> str | None:
        """The next key pressed (terminal only), or None after `timeout` seconds or at the end of input."""
        if not self.tty or (self.lines and self.lines[-1] is None):
            return None
        self.grab = self.loop.create_future()
        try:
            return await asyncio.wait_for(self.grab, timeout)
        except TimeoutError:
            return None
        finally:
            self.grab = None


class Screen:
    """The table's text scrolls above; at the bottom, on a terminal, a status region redrawn every tick:
    the clock line (`status()`) and the prompt with the line being typed."""

    def __init__(self, console: Console, keyboard: Keyboard, status: Callable[[], tuple[str, bool]]) -> None:
        self.console = console
        self.keyboard = keyboard
        self.status = status
        self.prompt = ""
        self.live: Live | None = None
        self._ticker: asyncio.Task[None] | None = None

    @property
    def ticking(self) -> bool:
        return self.console.is_terminal and self.keyboard.tty

    def start(self) -> None:
        if not self.ticking or self.live is not None:
            return
        self.live = Live(self._region(), console=self.console, auto_refresh=False, transient=True)
        self.live.start()
        self._ticker = asyncio.get_running_loop().create_task(self._tick())

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None
        if self.live is not None:
            self.live.stop()
            self.live = None

    async def _tick(self) -> None:
        while self.live is not None:
            self.refresh()
            self.keyboard.typed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.keyboard.typed.wait(), TICK_S)

    def refresh(self) -> None:
        if self.live is not None:
            self.live.update(self._region(), refresh=True)

    def _region(self) -> Group:
        line, low = self.status()
        parts = [Text(line, style="bold red" if low else "cyan")] if line else []
        if self.prompt:
            parts.append(Text(self.prompt + " ") + Text(self.keyboard.buffer + "▌", style="bold"))
        return Group(*parts)

    def print(self, *lines: str, style: str | None = None) -> None:
        for line in lines:
            self.console.print(line, style=style, markup=False, highlight=False)

    def ask(self, prompt: str) -> None:
        """The prompt under the clock (a terminal), or printed once as a line (a pipe)."""
        self.prompt = prompt
        if self.ticking:
            self.refresh()
        elif prompt:
            self.print(prompt)

    def clear(self) -> None:
        if self.console.is_terminal:
            self.stop()
            self.console.clear()
            self.start()

    async def hold(self, lines: Sequence[str]) -> None:
        """A summary, kept in view until a key is pressed or HOLD_S passes (a pipe goes straight on)."""
        self.print("", *lines, style="bold")
        if not self.ticking:
            return
        before, self.prompt = self.prompt, f"(any key to go on; the table resumes in {HOLD_S:g} s)"
        self.refresh()
        await self.keyboard.key(HOLD_S)
        self.prompt = before
        self.refresh()

    async def page(self, markdown: str) -> None:
        """The rules, a screenful at a time; `q` (or the last page) returns to the table. A pipe prints them."""
        if not self.ticking:
            self.console.print(Markdown(markdown))
            return
        with self.console.capture() as captured:
            self.console.print(Markdown(markdown))
        lines = captured.get().splitlines()
        height = max(5, self.console.size.height - 4)
        pages = [lines[i : i + height] for i in range(0, len(lines), height)] or [[]]
        index = 0
        before = self.prompt
        while 0 <= index < len(pages):
            self.clear()
            self.console.print(Text.from_ansi("\n".join(pages[index])))
            self.prompt = f"Rules {index + 1}/{len(pages)} — Enter or space: next page, b: back, q: back to the table"
            self.refresh()
            key = await self.keyboard.key(None)
            if key is None or key.lower() == "q":
                break
            index += -1 if key.lower() == "b" and index > 0 else (0 if key.lower() == "b" else 1)
        self.prompt = before
        self.clear()
