"""One source per fact (issue 19): the game catalog is the only place a game's name is looked up.

A game's package declares its name once; the project's other Python reads it from `workers.games.catalog`
(docstrings, tests and docs excepted: they describe, they do not decide). The command line's `--game`
choices are the catalog's names."""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tablehall.cli import parser
from tests.conftest import REPO
from workers.games import catalog
from workers.games.five_oh_one import FiveOhOne
from workers.games.spectacular_bid import SpectacularBid

ROOT = REPO
PROJECT = ("tablehall", "gateway", "ratings", "workers")
PACKAGES = {SpectacularBid.name: "workers/games/spectacular_bid", FiveOhOne.name: "workers/games/five_oh_one"}
CATALOG = "workers/games/catalog.py"


def spelled(source: str, name: str) -> Iterator[int]:
    """Lines of `source` where a string literal (not a docstring) spells the game name `name` as a word
    ("501♠", the card game's title, and "tablehall_501" are other words)."""
    word = re.compile(rf"(?<![\w-]){re.escape(name)}(?![\w♠-])")
    tree = ast.parse(source)
    prose = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr)}
    for node in ast.walk(tree):
        literal = isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
        if literal and word.search(node.value):
            yield node.lineno


def python_files() -> Iterator[Path]:
    for top in PROJECT:
        yield from sorted((ROOT / top).rglob("*.py"))


def test_the_catalog_hosts_each_game_package() -> None:
    assert set(catalog.names()) == set(PACKAGES)
    assert catalog.names()[0] == catalog.SPECTACULAR_BID
    assert (SpectacularBid.name, FiveOhOne.name) == (catalog.SPECTACULAR_BID, catalog.FIVE_OH_ONE)


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_no_game_name_is_spelled_outside_its_package_and_the_catalog(name: str) -> None:
    found = []
    for path in python_files():
        where = path.relative_to(ROOT).as_posix()
        if where == CATALOG or where.startswith(PACKAGES[name] + "/"):
            continue
        found += [f"{where}:{line}" for line in spelled(path.read_text(encoding="utf-8"), name)]
    assert found == [], f"{name!r} spelled out; read workers.games.catalog instead"


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_a_game_package_declares_its_name_once(name: str) -> None:
    """One literal whose value is the name (its messages may say it in words: "501 is played by 3 or 4")."""
    found = [
        f"{path.relative_to(ROOT).as_posix()}:{node.lineno}"
        for path in sorted((ROOT / PACKAGES[name]).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value == name
    ]
    assert len(found) == 1, found


def test_the_scan_finds_a_spelled_name() -> None:
    """The check above can fail: a literal, an f-string's text and a message list are all found."""
    source = 'x = "501"\ny = f"unknown game {z}: spectacular-bid or 501"\n"""A docstring: 501 and spectacular-bid."""\n'
    assert list(spelled(source, "501")) == [1, 2]
    assert list(spelled(source, "spectacular-bid")) == [2]
    assert list(spelled('t = "501♠ — hand 1"\nport = "50501"\n', "501")) == []


def game_flags(found: argparse.ArgumentParser, path: str = "tablehall") -> Iterator[tuple[str, argparse.Action]]:
    """Every `--game` flag of the command line, with the command it belongs to."""
    for action in found._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in action.choices.items():
                yield from game_flags(sub, f"{path} {command}")
        elif action.dest == "game":
            yield path, action


def test_the_command_lines_game_choices_are_the_catalog() -> None:
    flags = dict(game_flags(parser()))
    assert set(flags) == {
        "tablehall demo", "tablehall play", "tablehall bench engine", "tablehall bench service",
        "tablehall bench tables", "tablehall tables create", "tablehall tournament create",
        "tablehall bench lobby", "tablehall lobby join", "tablehall lobby challenge open",
        "tablehall lobby challenge list", "tablehall bench bots", "tablehall lobby bot", "tablehall bench views",
        "tablehall bench path",
    }  # fmt: skip
    for command, flag in flags.items():
        choices = list(flag.choices or ())
        if command in ("tablehall bench engine", "tablehall bench bots", "tablehall bench views"):
            assert (choices, flag.default) == (["all", *catalog.names()], "all")
        else:
            assert choices == list(catalog.names()), command
            assert flag.default in (None, catalog.names()[0]), command


def test_messages_and_help_read_the_catalog() -> None:
    assert catalog.listed() == "spectacular-bid or 501"
    assert catalog.unknown_game("chess") == "unknown game 'chess': spectacular-bid or 501"
    assert (catalog.seat_counts(catalog.FIVE_OH_ONE), catalog.fewest_seats(catalog.FIVE_OH_ONE)) == ("3 or 4", 3)
    assert (catalog.seat_counts(catalog.SPECTACULAR_BID), catalog.fewest_seats(catalog.SPECTACULAR_BID)) == ("2", 2)
    assert catalog.option_default(catalog.SPECTACULAR_BID, "bank_s") == "120"
    assert catalog.option_default(catalog.FIVE_OH_ONE, "start_score") == "501"
    assert catalog.option_default(catalog.FIVE_OH_ONE, "decision_limit_s") == "off"
