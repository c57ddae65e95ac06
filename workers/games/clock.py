"""The match clock (SB-10): a bank per seat plus a fresh delay for each new decision.

An immutable value of tiny pure methods, settings apart from state (after scalachess's Clock).
A stopped clock (no `turn`) is a pause: deal, settlement, ready wait, shared-device hand-over.
501♠'s per-decision limit is the same clock with an empty bank and the limit as its delay.
"""

from __future__ import annotations

from dataclasses import dataclass

from workers.games.engine import Millis, Seat
from workers.games.values import built_fast


@built_fast
@dataclass(frozen=True, slots=True)
class ClockSettings:
    bank: Millis
    delay: Millis


@built_fast
@dataclass(frozen=True, slots=True)
class Clock:
    settings: ClockSettings
    banks: tuple[Millis, ...]
    turn: Seat | None = None
    since: Millis = Millis(0)

    @classmethod
    def fresh(cls, settings: ClockSettings, seats: int) -> Clock:
        return cls(settings, (settings.bank,) * seats)

    @property
    def running(self) -> bool:
        return self.turn is not None

    def start(self, seat: Seat, now: Millis) -> Clock:
        """A truly new decision for `seat`: a fresh delay from `now`. Any running decision ends first."""
        banks = self.banks if self.turn is None else self._charged(now)  # one new clock, not two
        return Clock(self.settings, banks, seat, now)

    def stop(self, now: Millis) -> Clock:
        """The running decision ends at `now`: its time beyond the delay comes out of the bank."""
        if self.turn is None:
            return self
        return Clock(self.settings, self._charged(now), None, now)

    def deadline(self) -> Millis | None:
        """The first instant at which the running seat has lost on time (arrivals must be earlier)."""
        turn = self.turn
        if turn is None:
            return None
        return Millis(self.since + self.settings.delay + self.banks[turn])

    def flag(self) -> Clock:
        """The running seat's deadline passed: its bank is empty and the clock stops there."""
        deadline = self.deadline()
        return self if deadline is None else self.stop(deadline)

    def bank_at(self, seat: Seat, now: Millis) -> Millis:
        """What `seat`'s bank shows at `now`, the running decision's overage included."""
        if self.turn != seat:
            return self.banks[seat]
        return self._charged(now)[seat]

    def delay_left(self, now: Millis) -> Millis:
        if self.turn is None:
            return Millis(0)
        return Millis(max(0, self.since + self.settings.delay - now))

    def _charged(self, now: Millis) -> tuple[Millis, ...]:
        assert self.turn is not None
        over = now - self.since - self.settings.delay
        if over <= 0:
            return self.banks
        banks = list(self.banks)
        banks[self.turn] = Millis(max(0, banks[self.turn] - over))
        return tuple(banks)
