"""Spectacular Bid's match options, declared once: names, ranges and defaults (docs/RULES.md, GetRules).

The ranges are what a club would set, with room for short games: a bank of 10 s to 3 h, a delay of
up to a minute, 20 to 1000 starting points. Anything shorter than a human can act on is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from workers.games.clock import ClockSettings
from workers.games.engine import JSON, Millis, millis, seconds
from workers.games.options import Kind, OptionSpec, read_options
from workers.games.values import pickled_by_constructor

NAME = "spectacular-bid"
"""The game's name in records, views and the API, declared once (`SpectacularBid.name`; the catalog reads it)."""

OPTIONS: tuple[OptionSpec, ...] = (
    OptionSpec(
        "start_points", Kind.WHOLE, 150, "Each player's points at the start (SB-1).", 20, 1000, multiple_of=5
    ),
    OptionSpec("bank_s", Kind.SECONDS, 120.0, "Each player's time bank for the whole match (SB-10).", 10, 10_800),
    OptionSpec("delay_s", Kind.SECONDS, 10.0, "The delay of each new decision, before the bank runs (SB-10).", 0, 60),
    OptionSpec(
        "ready_timeout_s",
        Kind.SECONDS,
        60.0,
        "After a deal or a settlement the clocks start when both press Continue, or this long after (SB-10).",
        5,
        600,
    ),
    OptionSpec(
        "shared_device", Kind.FLAG, False, "One device passed between the players; hand-overs stop the clock."
    ),
)


@pickled_by_constructor
@dataclass(frozen=True, slots=True)
class Options:
    """A match's options as the rules use them (durations in whole milliseconds)."""

    start_points: int
    bank: Millis
    delay: Millis
    ready_timeout: Millis
    shared_device: bool

    @staticmethod
    def parse(raw: Mapping[str, JSON]) -> Options:
        """The options of a new match (or a record), each checked against its range in `OPTIONS`."""
        chosen = read_options(OPTIONS, raw, "Spectacular Bid")
        start, shared = chosen["start_points"], chosen["shared_device"]
        assert isinstance(start, int) and isinstance(shared, bool)
        return Options(start, _ms(chosen["bank_s"]), _ms(chosen["delay_s"]), _ms(chosen["ready_timeout_s"]), shared)

    def to_json(self) -> dict[str, JSON]:
        return {
            "start_points": self.start_points,
            "bank_s": seconds(self.bank),
            "delay_s": seconds(self.delay),
            "ready_timeout_s": seconds(self.ready_timeout),
            "shared_device": self.shared_device,
        }

    @property
    def clock(self) -> ClockSettings:
        return ClockSettings(self.bank, self.delay)


def _ms(value: int | float | bool | None) -> Millis:
    assert isinstance(value, int | float) and not isinstance(value, bool)
    return millis(value)
