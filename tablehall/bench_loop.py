"""How the serving process's event loop spent a bench's load, read from Linux's per-thread scheduler counters.

A Python service's commands all pass through one thread, the one that runs its event loop (the process's
main thread): when it is on a core nearly all the time, the rate is its CPU per command; when it often
waits for a core, or is taken off one while it has work (preempted: another process woke on its core), the
rate is what the machine's other work leaves it. Reading both tells which of the two holds a run back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True, slots=True)
class LoopCounters:
    """One reading of a thread's counters: nanoseconds on a core and waiting for one, times preempted."""

    on_core_ns: int
    waiting_ns: int
    preempted: int

    @staticmethod
    def read(pid: int | None) -> LoopCounters | None:
        """The main thread of process `pid` (None: no such process, or a kernel without these counters)."""
        if pid is None:
            return None
        task = Path(f"/proc/{pid}/task/{pid}")
        try:
            on_core, waiting, _ = (int(n) for n in (task / "schedstat").read_text().split()[:3])
            status = (task / "status").read_text()
        except (OSError, ValueError):
            return None
        preempted = next(
            (int(line.split()[1]) for line in status.splitlines() if line.startswith("nonvoluntary_ctxt_switches")),
            None,
        )
        return None if preempted is None else LoopCounters(on_core, waiting, preempted)


@dataclass(frozen=True, slots=True)
class LoopShare:
    """The loop thread over a run: its CPU a command, and its wall time on a core and waiting for one."""

    cpu_ms_per_command: float
    on_core: float
    """Fraction of the run's wall time."""
    waiting: float
    """Fraction of the run's wall time it was ready to run but every core was taken."""
    preempted_per_s: float

    @staticmethod
    def over(before: LoopCounters | None, after: LoopCounters | None, wall_s: float, commands: int) -> LoopShare | None:
        """The run between two readings (None when either is missing, or nothing ran)."""
        if before is None or after is None or wall_s <= 0 or commands <= 0:
            return None
        on_core_s = (after.on_core_ns - before.on_core_ns) / 1e9
        return LoopShare(
            on_core_s * 1000 / commands,
            on_core_s / wall_s,
            (after.waiting_ns - before.waiting_ns) / 1e9 / wall_s,
            (after.preempted - before.preempted) / wall_s,
        )

    def words(self) -> str:
        """One line of the bench's report (`tablehall serve`'s main thread: with worker processes, the gateway's)."""
        return (
            f"tablehall serve's event-loop thread: {self.cpu_ms_per_command:.3f} ms of CPU a command, on a core "
            f"{self.on_core:.0%} of the time, waiting for one {self.waiting:.0%}, "
            f"preempted {self.preempted_per_s:,.0f} times a second"
        )
