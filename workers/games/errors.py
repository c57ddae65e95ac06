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
