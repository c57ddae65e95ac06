"""One error class per kind of failure, each with a stable code the service maps to a status once."""

from __future__ import annotations

from typing import ClassVar


class RulesError(Exception):
    """Base of every error the rules core raises; `code` is stable across releases."""

    code: ClassVar[str] = "rules_error"


class IllegalAction(RulesError):
    """A well-formed action that the rules do not allow now; the state is left untouched."""

    code = "illegal_action"


class MalformedAction(RulesError):
    """An action, deal or option that cannot be read at all (unknown tile, missing field, ...)."""

    code = "malformed_input"


QUOTED_CHARS = 40
"""The most of a client's input that an error message repeats; the rest is counted, never echoed."""


def quote(value: object, *, marks: bool = True) -> str:
    """Client input as every error message shows it: its repr (`marks=False`: a string as it is), cut to
    `QUOTED_CHARS` characters with the length of the whole, so a refusal stays short however big the
    input was."""
    if isinstance(value, str):
        shown = value[:QUOTED_CHARS]
        shown = repr(shown) if marks else shown
        return shown if len(value) <= QUOTED_CHARS else f"{shown}… ({len(value):,} characters)"
    text = repr(value)
    return text if len(text) <= QUOTED_CHARS else f"{text[:QUOTED_CHARS]}… ({len(text):,} characters)"
