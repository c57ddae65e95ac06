"""The table's key states, drawn by the built page in Debian's Chromium at desktop and phone sizes, compared
with the reference images in tests/web_refs/ (web/e2e/screens.mjs), so that an accidental change of the table
shows in review. The states are exact: each is a view the rules engine made in a bot match with a fixed seed
(the deals come from that seed, not from the service's CSPRNG), kept in tests/web_refs/cases.json (501♠'s
cards hash by identity, so a seeded bot match does not repeat across processes; the views are therefore
made once and kept, and checked here against the views' JSON Schema), reached with the taps a person makes;
live clock digits are masked. The new pictures, and where they differ, are kept in test-artifacts/web-screens/.

After an intended change of the table: `TABLEHALL_UPDATE_WEB_REFS=1 pytest tests/test_web_screens.py`
rewrites the references, cases.json included (review them, then commit them). A new Chromium may shape text
a pixel wider (a line then wraps): `TABLEHALL_UPDATE_WEB_REFS=pictures` redraws the pictures alone from the
kept cases; `chromium.txt` names the browser that drew them, and a failure says when it is not this one."""

from __future__ import annotations

import json
import os
import random
import subprocess
from collections.abc import Callable, Iterator
from itertools import pairwise
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tablehall.selfplay import self_play
from tests.web_support import ARTIFACTS, CHROMIUM, REPO, LiveService, live_service, require_browser_tools
from workers.games.catalog import game_named
from workers.games.engine import Seat

REFS = REPO / "tests" / "web_refs"
NAMES = [
    "sb-lead",
    "sb-auction",
    "sb-spinner",
    "sb-block-summary",
    "sb-result",
    "501-declare",
    "501-trick",
    "501-hand-summary",
    "501-result",
]
TOLERANCE = 0.01
"""At most this share of a picture's pixels may differ from its reference (font smoothing, not layout)."""
SB_NAMES = ["Ana", "Bia"]
FIVE_NAMES = ["Ana", "Bia", "Cid"]

View = dict[str, Any]


@pytest.fixture(scope="module")
def service() -> Iterator[LiveService]:
    yield from live_service()


def problems(view: View) -> list[str]:
    schema = json.loads((REPO / "protos" / "tablehall" / "v1" / "views" / f"{view['game']}.schema.json").read_text())
    return [e.message for e in Draft202012Validator(schema).iter_errors(view)]


def views(game: str, players: int, seed: int, **options: Any) -> list[list[View]]:
    """Every step of a seeded bot match, as each seat sees it: steps[i][seat]."""
    engine = game_named(game)
    assert engine is not None
    turns = self_play(engine, [f"P{i}" for i in range(players)], random.Random(seed), options=options)
    return [[engine.view(t.match.state, Seat(s)).to_json() for s in range(players)] for t in turns]


def first(
    steps: list[list[View]], seat_of: Callable[[View], int | None], wanted: Callable[[View], bool]
) -> tuple[View, View]:
    """The first view (and the one before it) of the seat `seat_of` names that is `wanted`."""
    for before, now in pairwise(steps):
        seat = seat_of(now[0])
        if seat is not None and wanted(now[seat]):
            return now[seat], before[seat]
    raise AssertionError("no such state in this seeded match")


def arms(view: View) -> int:
    return sum(1 for end in "WENS" if view["layout"]["lines"][end])


def cases() -> list[dict[str, Any]]:
    sb = views("spectacular-bid", 2, 46, start_points=150)  # seed 46: auctions, a block, the spinner's four arms
    five = views("501", 3, 7, start_score=120)
    turn: Callable[[View], int | None] = lambda v: v["turn"]  # noqa: E731
    ana: Callable[[View], int | None] = lambda v: 0  # noqa: E731
    declarer: Callable[[View], int | None] = lambda v: v["declarer"] if v["phase"] == "contract" else None  # noqa: E731
    out = []

    def case(name: str, names: list[str], found: tuple[View, View], steps: list[str] | None = None) -> None:
        view, previous = found
        out.append({"name": name, "names": names, "view": view, "previous": previous, "steps": steps or []})

    case("sb-lead", SB_NAMES, first(sb, turn, lambda v: v["phase"] == "lead"), ["pick-tile"])
    case("sb-auction", SB_NAMES, first(sb, turn, lambda v: v["phase"] == "auction" and v["auction"] is not None))
    four = first(
        sb, turn, lambda v: v["phase"] == "play" and arms(v) == 4 and any(a["do"] == "play" for a in v["legal"])
    )
    case("sb-spinner", SB_NAMES, four, ["pick-tile"])
    blocked = first(sb, ana, lambda v: v["phase"] == "ready" and (v["past_rounds"] or [{}])[-1].get("end") == "block")
    case("sb-block-summary", SB_NAMES, blocked)
    case("sb-result", SB_NAMES, first(sb, ana, lambda v: v["phase"] == "over"))
    case("501-declare", FIVE_NAMES, first(five, declarer, lambda v: True), ["trump", "target", "give-two"])
    case("501-trick", FIVE_NAMES, first(five, turn, lambda v: len(v["trick"]) == 2))
    case("501-hand-summary", FIVE_NAMES, first(five, ana, lambda v: len(v["hands"]) == 1 and v["phase"] == "bidding"))
    case("501-result", FIVE_NAMES, first(five, ana, lambda v: v["phase"] == "over"))
    return out


def test_the_tables_key_states_look_as_their_references(service: LiveService) -> None:
    web = require_browser_tools()
    out = ARTIFACTS / "web-screens"
    out.mkdir(parents=True, exist_ok=True)
    asked = os.environ.get("TABLEHALL_UPDATE_WEB_REFS", "")
    update = asked in ("1", "pictures")
    if asked == "1":
        (REFS / "cases.json").write_text(json.dumps(cases(), indent=1) + "\n")
    kept = json.loads((REFS / "cases.json").read_text())
    assert [c["name"] for c in kept] == NAMES
    for c in kept:  # the kept views are views as the contract describes them, not hand-made pictures
        for view in (c["view"], c["previous"]):
            assert not problems(view), (c["name"], problems(view))
    (out / "cases.json").write_text(json.dumps(kept))
    command = ["node", "e2e/screens.mjs", service.url, str(out / "cases.json"), str(out), str(REFS)]
    ran = subprocess.run(
        [*command, *(["update"] if update else [])], cwd=web, capture_output=True, text=True, timeout=180
    )
    lines = [line for line in ran.stdout.splitlines() if line.startswith("SCREENS ")]
    assert ran.returncode == 0 and lines, f"screens.mjs failed:\n{ran.stderr}"
    report = json.loads(lines[0].removeprefix("SCREENS "))
    assert len(report) == 2 * len(NAMES), "each state at desktop and phone size"
    if update:
        (REFS / "chromium.txt").write_text(browser() + "\n")
        return
    missing = [r["name"] for r in report if r["status"] == "missing"]
    assert not missing, f"no reference for {missing}: TABLEHALL_UPDATE_WEB_REFS=1 writes them (web/README.md)"
    changed = {
        r["name"]: round(r["differing"] / r["total"], 4) for r in report if r["differing"] > TOLERANCE * r["total"]
    }
    drawn_by = (REFS / "chromium.txt").read_text().strip()
    assert not changed, (
        f"the table looks different from tests/web_refs/ (share of pixels; see {out}/*-diff.png): {changed}"
        + ("" if drawn_by == browser() else f"; the references were drawn by {drawn_by}, this is {browser()}")
    )


def browser() -> str:
    """The Chromium that draws the pictures (Debian's), as it names itself."""
    return subprocess.run([CHROMIUM, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
