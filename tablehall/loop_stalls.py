"""How long the event loop goes without a turn, in CPU time of its own thread: what delays a due timer by the
loop's own work, apart from waiting for a core that other processes hold (wall-clock lateness mixes both).

A heartbeat re-armed every `EVERY_S` notes the loop thread's CPU clock each time it runs; a gap between two
beats is the CPU the loop spent on everything that ran between them (its longest stretch plus at most one
beat's worth of small ones). The cyclic collector's passes are timed too: they run inside those stretches.
Each gap's wall-clock length is kept with the CPU the whole process spent in it: a long gap with little CPU
in it was a wait for a core, which no change to the worker's own work shortens.
"""

from __future__ import annotations

import asyncio
import gc
import time
from dataclasses import dataclass, field
from typing import Any

EVERY_S = 0.001
"""A beat every millisecond: finer than the target (a timer ≤ 5 ms late), cheap (a callback per beat)."""


@dataclass
class LoopStalls:
    """Beats of one event loop (`start` on it, `stop` when done): gaps and collector passes, in CPU ms."""

    gaps_ms: list[float] = field(default_factory=list)
    waits: list[tuple[float, float]] = field(default_factory=list)
    """Per gap, its wall-clock length and the CPU the whole process spent in it (ms): a long gap with little
    CPU in it is a wait for a core (other processes), not the loop's own work nor another thread's."""
    collections_ms: dict[int, list[float]] = field(default_factory=lambda: {0: [], 1: [], 2: []})
    """Per generation, each pass of the cyclic collector (CPU ms of the thread that ran it)."""
    _last_ns: int = 0
    _last_wall_ns: int = 0
    _last_process_ns: int = 0
    _gc_started_ns: int = 0
    _handle: asyncio.TimerHandle | None = None

    def start(self) -> None:
        self._last_ns = time.thread_time_ns()
        self._last_wall_ns, self._last_process_ns = time.monotonic_ns(), time.process_time_ns()
        gc.callbacks.append(self._collected)
        self._handle = asyncio.get_running_loop().call_later(EVERY_S, self._beat)

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        if self._collected in gc.callbacks:
            gc.callbacks.remove(self._collected)

    def _beat(self) -> None:
        now, wall, process = time.thread_time_ns(), time.monotonic_ns(), time.process_time_ns()
        self.gaps_ms.append((now - self._last_ns) / 1e6)
        self.waits.append(((wall - self._last_wall_ns) / 1e6, (process - self._last_process_ns) / 1e6))
        self._last_ns, self._last_wall_ns, self._last_process_ns = now, wall, process
        self._handle = asyncio.get_running_loop().call_later(EVERY_S, self._beat)

    def _collected(self, phase: str, about: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started_ns = time.thread_time_ns()
        else:
            self.collections_ms[int(about["generation"])].append((time.thread_time_ns() - self._gc_started_ns) / 1e6)
