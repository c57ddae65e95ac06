"""Match options: each game declares its options once, as `OptionSpec`s (name, kind, range, default).

The engines read a match's options through `read_options`, the gateway shows the same specs in
`GetRules`, and the documents are checked against them: one source for names, ranges and defaults.
A value outside its range is refused with `MalformedAction` (INVALID_ARGUMENT, `malformed_input`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from workers.games.errors import MalformedAction, quote

Value = int | float | bool | None
"""An option's value as a match uses it: a whole number, seconds, a flag, or None (off)."""


class Kind(Enum):
    WHOLE = "whole"
    """A whole number (JSON integer)."""
    SECONDS = "seconds"
    """A duration in seconds (JSON number), kept to the millisecond."""
    FLAG = "flag"
    """true or false."""


@dataclass(frozen=True, slots=True)
class OptionSpec:
    """One option of one game. `default` None means the option is off unless set (and may be null)."""

    name: str
    kind: Kind
    default: Value
    summary: str
    least: float = 0
    most: float = 0
    multiple_of: int = 1

    def read(self, raw: Mapping[str, object]) -> Value:
        """This option's value in `raw` (its default when absent), or `MalformedAction` outside the range."""
        if self.name not in raw:
            return self.default
        value = raw[self.name]
        if value is None and self.default is None:
            return None
        if self.kind is Kind.FLAG:
            if not isinstance(value, bool):
                raise MalformedAction(f"{self.name} must be true or false, not {quote(value)}")
            return value
        number = value if isinstance(value, int | float) and not isinstance(value, bool) else None
        whole = self.kind is Kind.WHOLE
        if number is None or (whole and not isinstance(number, int)) or not self.least <= number <= self.most:
            raise MalformedAction(f"{self.name} must be {self.allowed()}, not {quote(value)}")
        if whole and number % self.multiple_of:
            raise MalformedAction(f"{self.name} must be {self.allowed()}, not {quote(value)}")
        return number

    def allowed(self) -> str:
        """The accepted values in words: "a whole number from 20 to 1000, a multiple of 5"."""
        if self.kind is Kind.FLAG:
            return "true or false"
        span = f"from {_number(self.least)} to {_number(self.most)}"
        if self.kind is Kind.SECONDS:
            words = f"a number of seconds {span}"
        else:
            words = f"a whole number {span}"
            if self.multiple_of > 1:
                words += f", a multiple of {self.multiple_of}"
        if self.default is None:
            words += ", or null (off)"
        return words

    def describe(self) -> str:
        """One line for the rules text: name, accepted values, default, what it sets."""
        return f"`{self.name}`: {self.allowed()}; default {self.default_text()}. {self.summary}"

    def default_text(self) -> str:
        if self.default is None:
            return "off"
        if isinstance(self.default, bool):
            return "true" if self.default else "false"
        return _number(self.default) + (" s" if self.kind is Kind.SECONDS else "")


def read_options(specs: tuple[OptionSpec, ...], raw: Mapping[str, object], game: str) -> dict[str, Value]:
    """Every option of a game from a match's (or a record's) options; unknown names are refused."""
    known = {spec.name for spec in specs}
    unknown = sorted(str(name) for name in raw if name not in known)
    if unknown:
        names = ", ".join(quote(name, marks=False) for name in unknown[:3]) + (", …" if len(unknown) > 3 else "")
        raise MalformedAction(f"unknown {game} option(s): {names}; known: {', '.join(sorted(known))}")
    return {spec.name: spec.read(raw) for spec in specs}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)
