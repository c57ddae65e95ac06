"""Every command's and subcommand's --help is readable: argparse formats help text with %-formatting, so a
bare "%" in a help string is a traceback for whoever asks for help."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

from tablehall.cli import parser


def _every(command: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield path
    for action in command._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _every(sub, (*path, name))


def _parser_at(path: tuple[str, ...]) -> argparse.ArgumentParser:
    found = parser()
    for name in path:
        sub = next(a for a in found._actions if isinstance(a, argparse._SubParsersAction))
        found = sub.choices[name]
    return found


def test_every_help_text_formats() -> None:
    paths = list(_every(parser()))
    assert ("bench", "bots") in paths
    for path in paths:
        text = _parser_at(path).format_help()
        assert text.startswith("usage: "), path
