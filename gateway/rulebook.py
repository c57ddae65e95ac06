"""What `GetRules` serves: a game's rules in the project's words (`gateway/rules/<game>.md`) followed by
its match options, and the same options as structured `OptionRange`s. Both come from the game's one
declaration of its options (`Game.options`), so the text, the message and the engine never disagree."""

from __future__ import annotations

import json
from importlib import resources

from protos.tablehall.v1 import matches_pb2
from workers.errors import NotFound
from workers.games.catalog import game_named, listed
from workers.games.errors import quote
from workers.games.options import OptionSpec

OPTIONS_HEADING = "## Match options"


def rules_for(name: str) -> matches_pb2.Rules:
    game = game_named(name)
    if game is None:
        raise NotFound(f"no game {quote(name)}: {listed()}")
    text = resources.files("gateway").joinpath("rules", f"{game.name}.md").read_text(encoding="utf-8")
    return matches_pb2.Rules(
        game=game.name,
        text=text.rstrip("\n") + "\n\n" + options_text(game.options),
        options=[option_range(spec) for spec in game.options],
    )


def options_text(specs: tuple[OptionSpec, ...]) -> str:
    lines = [
        OPTIONS_HEADING,
        "",
        "Chosen by whoever creates the match; a value outside its range is refused (INVALID_ARGUMENT,",
        "`malformed_input`) and nothing is created.",
        "",
    ]
    lines += [f"- {spec.describe()}" for spec in specs]
    return "\n".join(lines) + "\n"


def option_range(spec: OptionSpec) -> matches_pb2.OptionRange:
    return matches_pb2.OptionRange(
        name=spec.name,
        kind=spec.kind.value,
        least=spec.least,
        most=spec.most,
        multiple_of=spec.multiple_of,
        default_json=json.dumps(spec.default),
        summary=spec.summary,
    )
